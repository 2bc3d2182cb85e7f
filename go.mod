module github.com/idc-lts/kube-1.17

go 1.26.8

require golang.org/x/mod v0.42.0 // indirect
