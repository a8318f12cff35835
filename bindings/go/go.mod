module github.com/libzkelect/libzkelect/bindings/go

go 1.21
