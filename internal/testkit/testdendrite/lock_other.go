//go:build !unix || aix

package testdendrite

// lockFile does not lock where flock is missing: parallel test binaries
// may then each build Dendrite once.
func lockFile(string, func()) (unlock func(), err error) { return func() {}, nil }
