package capi

// The generated layer is written against libzkelect 1.x; a header of
// another major version may declare the same names with other meanings, so
// the build stops here instead of linking something that misbehaves.

/*
#cgo pkg-config: libzkelect
#include <zkelect/version.h>
#if !defined(ZKELECT_VERSION_MAJOR) || ZKELECT_VERSION_MAJOR != 1
#error "this Go module needs libzkelect 1.x: the installed zkelect/version.h has another major version"
#endif
*/
import "C"
