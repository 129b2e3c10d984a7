package devenv

import (
	"net"
	"strconv"

	"github.com/flink-admission/flink-admission/internal/freeport"
)

// ResolvePort replaces port 0 in host:0 with a free port; "" and "0" (off) stay.
func ResolvePort(addr string) (string, error) {
	if addr == "" || addr == "0" {
		return "0", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port != "0" {
		return addr, nil
	}
	p, err := freeport.Get()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// HTTPURL is the URL of a bound address, "" when off.
func HTTPURL(addr string) string {
	if addr == "0" {
		return ""
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
