//go:build !unix

package main

import "os"

// chownTree does nothing where files have no Unix owner.
func chownTree(dir string, like os.FileInfo) error { return nil }
