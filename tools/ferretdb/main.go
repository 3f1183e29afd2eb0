// Command ferretdb runs FerretDB (a MongoDB wire-protocol server) on its SQLite backend for layerbench.
//
// FerretDB's own command (github.com/FerretDB/FerretDB/cmd/ferretdb) panics at start when it is
// built with `go install` (its version is read from files a release build generates); the
// embeddable package does not, so this wrapper runs that: one TCP listener, one SQLite directory
// (one database file per MongoDB database), logs on stderr, and a clean exit (listener and
// connections closed, SQLite databases closed) on SIGTERM or SIGINT. tools/build-ferretdb.sh
// builds it against a copy of FerretDB with one fix (see there).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

const module = "github.com/FerretDB/FerretDB"

func main() {
	listen := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to listen on (host:port)")
	dir := flag.String("sqlite-dir", "", "directory of the SQLite databases (must exist)")
	level := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	version := flag.Bool("version", false, "print FerretDB's version and exit")
	flag.Parse()

	if *version {
		fmt.Println(ferretDBVersion())
		return
	}
	if err := run(*listen, *dir, *level); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, dir, level string) error {
	if dir == "" {
		return fmt.Errorf("-sqlite-dir is required")
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// FerretDB wants a file: URI of a directory, ending with a slash; url.URL escapes odd characters.
	uri := &url.URL{Scheme: "file", Path: abs + "/", OmitHost: true}

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})),
		Handler:   "sqlite",
		SQLiteURL: uri.String(),
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return f.Run(ctx) // returns once ctx is cancelled and everything is closed
}

// ferretDBVersion is the FerretDB module version this binary was built with, and whether
// tools/build-ferretdb.sh's patched copy replaced it.
func ferretDBVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == module && dep.Replace != nil {
				return "FerretDB " + dep.Version + " (patched by layerbench: _id lookups use the _id index)"
			}
			if dep.Path == module {
				return "FerretDB " + dep.Version
			}
		}
	}
	return "FerretDB (unknown version)"
}
