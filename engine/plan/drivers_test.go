package plan

import (
	_ "github.com/kinetic-run/kinetic/store/gcs" // gs:// (output directories, Data)
	_ "github.com/kinetic-run/kinetic/store/s3"  // s3://
)
