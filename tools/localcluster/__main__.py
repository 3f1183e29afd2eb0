"""`python3 tools/localcluster {k8s,swarm,docker} up DIR` / `... down DIR`: the test clusters by hand (as root).

Run with the project's Python (it imports layerbench for image archives and the Docker SDK), e.g.
`.venv/bin/python tools/localcluster k8s up /var/tmp/lbk8s`; `up` prints the kubeconfig's path (k8s),
the manager's Docker socket (swarm: what `layerbench --swarm-manager` takes), or each daemon's URL
(docker: plain Docker hosts, what `engine: {kind: docker-host, node: URL}` takes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from localcluster import dockerhosts, k8s, swarm

DEFAULT_BIN = Path("/var/cache/layerbench/k8s/bin")


def main() -> int:
    parser = argparse.ArgumentParser(prog="localcluster", description=__doc__)
    parser.add_argument("engine", choices=["k8s", "swarm", "docker"])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("dir", type=Path, help="where the cluster lives (up: must not exist)")
    parser.add_argument("--bin", type=Path, default=DEFAULT_BIN, help="tools/build-k8s.sh's output (k8s)")
    parser.add_argument("--nodes", type=int, help="how many (k8s and swarm: 3, docker: 2)")
    args = parser.parse_args()
    if args.action == "up" and args.engine == "k8s":
        print(k8s.up(args.dir, args.bin, args.nodes or 3).kubeconfig)
        return 0
    if args.action == "up" and args.engine == "swarm":
        print(swarm.up(args.dir, args.nodes or 3).manager)
        return 0
    if args.action == "up":
        state = dockerhosts.up(args.dir, args.nodes or 2)
        for name in state.names:
            print(state.url(name), state.socket(name))
        return 0
    left = {"k8s": k8s.down, "swarm": swarm.down, "docker": dockerhosts.down}[args.engine](args.dir)
    for what in left:
        print(f"left: {what}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
