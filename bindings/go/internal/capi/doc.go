// Package capi is the SWIG-generated layer over libzkelect's C API: one
// function per C function, the zkelect_ prefix removed, failures raised as
// panics "zkelect:<code>:<message>". Package zkelect is the API to use; it
// recovers those panics into errors.
//
// The wrapper sources are generated from bindings/swig/zkelect.i, never
// committed: run `go generate ./...` in bindings/go (swig and pkg-config
// libzkelect needed) before building.
package capi

//go:generate sh ../../gen.sh
