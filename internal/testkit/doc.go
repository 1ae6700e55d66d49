// Package testkit holds the packages below it, which are for tests only: nothing under
// internal/testkit is imported by product code, and none of it ships in the binary.
package testkit
