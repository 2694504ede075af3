package machine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// defaultRouteInterfaceNetlink asks the kernel (not /proc, which a
// --rootfs chroot usually lacks) for the interface of the default route of
// the given family (syscall.AF_INET or syscall.AF_INET6).
func defaultRouteInterfaceNetlink(family int) (*net.Interface, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, family)
	if err != nil {
		return nil, fmt.Errorf("reading the routing table: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("parsing the routing table: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		dstLen := m.Data[1]
		table := m.Data[4]
		if dstLen != 0 || table != syscall.RT_TABLE_MAIN {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			continue
		}
		for _, a := range attrs {
			if a.Attr.Type == syscall.RTA_OIF && len(a.Value) >= 4 {
				idx := int(binary.NativeEndian.Uint32(a.Value[:4]))
				iface, err := net.InterfaceByIndex(idx)
				if err != nil {
					return nil, err
				}
				if iface.Flags&net.FlagLoopback != 0 {
					continue
				}
				return iface, nil
			}
		}
	}
	return nil, errors.New("no default route")
}
