from layerbench.cli.app import main

main()
