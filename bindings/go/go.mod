module zkelect.dev/zkelect

go 1.21
