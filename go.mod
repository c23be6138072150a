module github.com/edgeconform/edgeconform

go 1.26.8

require (
	golang.org/x/net v0.62.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/text v0.43.0 // indirect
)
