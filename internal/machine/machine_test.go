package machine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultRouteAddressOnThisHost(t *testing.T) {
	if _, err := os.Stat("/proc/net/route"); err != nil {
		t.Skip("no routing table to compare with")
	}
	ip, err := DefaultRouteAddress("/proc/net/route", "/proc/net/ipv6_route")
	if err != nil {
		t.Skipf("this host has no default route: %v", err)
	}
	if !ip.IsGlobalUnicast() {
		t.Fatalf("got %v, want a global unicast address", ip)
	}
}

func TestDefaultRouteInterfaceFromFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "route")
	body := "Iface\tDestination\tGateway\tFlags\n" +
		"eth7\t0000A8C0\t00000000\t0001\n" +
		"eth9\t00000000\t0102A8C0\t0003\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	name, err := defaultRouteInterface(p, false)
	if err != nil || name != "eth9" {
		t.Fatalf("got %q, %v; want eth9", name, err)
	}
	if _, err := defaultRouteInterface(filepath.Join(dir, "missing"), false); err == nil {
		t.Fatal("a missing file must be an error")
	}
}

func TestDetectCRISocket(t *testing.T) {
	root := t.TempDir()
	got, err := DetectCRISocket(root)
	if err != nil || got != DefaultCRISocket {
		t.Fatalf("no socket: got %q, %v", got, err)
	}
}
