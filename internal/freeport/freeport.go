// Package freeport hands out TCP ports for servers that are told their port on the command
// line (flink-admission serve and dev, kube-apiserver under test) rather than binding port 0
// themselves.
//
// Asking the kernel for port 0 and closing the listener is not enough on a busy machine: the
// kernel gives outgoing connections their local ports from the same ephemeral range
// (net.ipv4.ip_local_port_range), so a load generator or an API server with thousands of
// connections takes the port before the server binds it, and the server fails with "address
// already in use". The ports handed out here lie below that range, where only listeners live,
// and each is handed out once per process.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the first port considered: above the well-known and most registered ports that
// local services listen on.
const lowest = 10000

var (
	mu     sync.Mutex
	issued = map[int]bool{}
)

// Get returns a port that is free on every interface now, below the kernel's ephemeral range,
// and not returned before by this process.
func Get() (int, error) {
	ports, err := GetN(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// GetN returns n distinct ports, as Get.
func GetN(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	highest := ephemeralLow() - 1
	if highest <= lowest {
		return nil, fmt.Errorf("no ports below the ephemeral range (which starts at %d)", highest+1)
	}
	var ports []int
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 10*(highest-lowest) {
			return nil, errors.New("no free port found below the ephemeral range")
		}
		p := lowest + rand.IntN(highest-lowest+1)
		if issued[p] || !bindable(p) {
			continue
		}
		issued[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// bindable reports whether p can be bound on all interfaces and on the loopback address
// (servers listen on either).
func bindable(p int) bool {
	for _, host := range []string{"", "127.0.0.1"} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range, or Linux's default when it
// cannot be read (another OS).
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 0 {
		return linuxDefault
	}
	return low
}
