//go:build tools

package kinetic

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/pelletier/go-toml/v2"
	_ "github.com/sabhiram/go-gitignore"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/memblob"
	_ "gocloud.dev/blob/s3blob"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sys/unix"
)
