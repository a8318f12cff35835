module zkelect.dev/crosslang

go 1.21

require zkelect.dev/zkelect v0.0.0

replace zkelect.dev/zkelect => ../../../../bindings/go
