package devenv

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolvePort(t *testing.T) {
	for _, off := range []string{"", "0"} {
		got, err := ResolvePort(off)
		require.NoError(t, err)
		assert.Equal(t, "0", got, "%q stays off", off)
		assert.Equal(t, "", HTTPURL(got))
	}
	got, err := ResolvePort("127.0.0.1:0")
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(got)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port, "port 0 is replaced by a concrete port")
	assert.Equal(t, "http://"+got, HTTPURL(got))

	got, err = ResolvePort(":8080")
	require.NoError(t, err)
	assert.Equal(t, ":8080", got, "a concrete port stays")
	assert.Equal(t, "http://127.0.0.1:8080", HTTPURL(got))

	_, err = ResolvePort("8080")
	assert.Error(t, err, "an address without a host part is rejected")
}
