// Package capi is the SWIG-generated layer over libzkelect's C API: one
// function per C function, the zkelect_ prefix removed, failures raised as
// panics "zkelect:<code>:<message>". Package zkelect is the API to use; it
// recovers those panics into errors.
//
// capi.go and capi_wrap.c are generated from bindings/swig/zkelect.i and
// committed, so building the module needs cgo and libzkelect's headers
// (pkg-config libzkelect), never swig. After changing the interface, run
// `go generate ./...` in bindings/go (swig needed) and commit the result.
package capi

//go:generate sh ../../gen.sh
