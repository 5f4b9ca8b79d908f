package data

import "golang.org/x/sys/unix"

// mapPopulate reads the whole file in when it is mapped: one fault instead of one per page.
const mapPopulate = unix.MAP_POPULATE
