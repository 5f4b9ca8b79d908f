//go:build !linux

package data

// mapPopulate: only Linux populates a mapping up front; elsewhere pages fault in.
const mapPopulate = 0
