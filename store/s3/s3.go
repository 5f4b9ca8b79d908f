// Package s3 is the store's s3:// driver: imported for its side effect, it links
// gocloud's s3blob (and the AWS SDK it needs), which store itself does not
// (store/driver.go).
package s3

import _ "gocloud.dev/blob/s3blob" // s3://
