module github.com/kube-informer/kube-informer/benches/compare/go

go 1.26.8

require (
	k8s.io/api v0.34.13 // indirect
	k8s.io/apimachinery v0.34.13 // indirect
	k8s.io/client-go v0.34.13 // indirect
)
