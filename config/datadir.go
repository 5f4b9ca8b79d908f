package config

import (
	"os"
	"path/filepath"
)

// DataDir is where Kinetic keeps local state (the default store, caches): $KINETIC_HOME
// if set, else $XDG_DATA_HOME/kinetic, else ~/.local/share/kinetic.
func DataDir() string { return dataDir(os.Getenv) }

func dataDir(getenv func(string) string) string {
	if d := getenv("KINETIC_HOME"); d != "" {
		return absPath(d)
	}
	// The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
	if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "kinetic")
	}
	return filepath.Join(homeDir(getenv), ".local", "share", "kinetic")
}

// homeDir prefers the injected HOME so tests (and callers with their own environment)
// never touch the real home directory.
func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	// No home at all (a bare container): a relative path beats a crash, and absPath
	// anchors it in the working directory.
	return absPath(".")
}

// absPath makes p absolute so a store URL built from it is valid whatever the working
// directory later becomes.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func defaultStore(getenv func(string) string) (string, string) {
	return fileURL(filepath.Join(dataDir(getenv), "store")), SourceDefault
}
