package clusterjson

import "github.com/flink-admission/flink-admission/api/v1beta1"

// Unmarshal decodes data, one FlinkCluster and nothing else, into v.
func Unmarshal(data []byte, v *v1beta1.FlinkCluster) error {
	d := NewDecoder(data, false)
	if err := FlinkCluster(d, v); err != nil {
		return err
	}
	return d.End()
}
