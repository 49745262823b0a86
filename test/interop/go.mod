module github.com/mcptasks/mcptasks/test/interop

go 1.26.8
