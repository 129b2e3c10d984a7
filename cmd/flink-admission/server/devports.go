package server

import (
	"net"
	"strconv"
)

// FreePort asks the kernel for a free port on 127.0.0.1. Another process could take it
// before the server listens; for a local development setup that is unlikely enough, and the
// server then fails with a clear "address already in use".
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

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
	p, err := FreePort()
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
