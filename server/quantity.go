package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// byteQuantity is a flag of a number of bytes written as a Kubernetes quantity ("64Mi",
// "100M", "1048576"), as the container's memory limit it is sized against is.
type byteQuantity int64

// String implements flag.Value.
func (q byteQuantity) String() string {
	return resource.NewQuantity(int64(q), resource.BinarySI).String()
}

// Set implements flag.Value.
func (q *byteQuantity) Set(s string) error {
	v, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := v.AsInt64()
	if !ok {
		return fmt.Errorf("%s is not a whole number of bytes", s)
	}
	*q = byteQuantity(n)
	return nil
}

// Type implements pflag.Value.
func (q *byteQuantity) Type() string { return "quantity" }
