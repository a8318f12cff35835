module zkelect.dev/crosslang

go 1.21

require github.com/libzkelect/libzkelect/bindings/go v0.0.0

replace github.com/libzkelect/libzkelect/bindings/go => ../../../../bindings/go
