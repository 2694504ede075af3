package etcdrpc

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Header is etcd's ResponseHeader: who answered, at which revision.
type Header struct {
	ClusterID uint64 // 1
	MemberID  uint64 // 2
	Revision  int64  // 3
	RaftTerm  uint64 // 4
}

// Member is etcd's Member. A member that was added but never started has
// no name and no client URL.
type Member struct {
	ID         uint64   // 1
	Name       string   // 2
	PeerURLs   []string // 3
	ClientURLs []string // 4
	IsLearner  bool     // 5
}

// Status is etcd's StatusResponse, the fields kubeadm reads.
type Status struct {
	Header           Header   // 1
	Version          string   // 2
	DBSize           int64    // 3
	Leader           uint64   // 4
	RaftIndex        uint64   // 5
	RaftTerm         uint64   // 6
	RaftAppliedIndex uint64   // 7
	Errors           []string // 8
	DBSizeInUse      int64    // 9
	IsLearner        bool     // 10
}

// Encoding of requests: every field number is below 16.

func appendVarint(b []byte, n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
}

func appendBytes(b []byte, n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
}

func appendBool(b []byte, n protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return appendVarint(b, n, 1)
}

// memberListRequest: linearizable (1).
func memberListRequest() []byte { return appendBool(nil, 1, true) }

// memberAddRequest: peerURLs (1, repeated), isLearner (2).
func memberAddRequest(peerURLs []string, learner bool) []byte {
	var b []byte
	for _, u := range peerURLs {
		b = appendBytes(b, 1, []byte(u))
	}
	return appendBool(b, 2, learner)
}

// memberIDRequest: ID (1), for MemberRemove and MemberPromote.
func memberIDRequest(id uint64) []byte {
	if id == 0 {
		return nil
	}
	return appendVarint(nil, 1, id)
}

// countRequest is a RangeRequest for key alone: key (1), count_only (9).
func countRequest(key string) []byte {
	return appendBool(appendBytes(nil, 1, []byte(key)), 9, true)
}

// Decoding of answers: fields in any order, unknown ones skipped.

// fields calls f with each field of message b; f returns how many bytes of
// the value it consumed (a negative number for an error), or -1 to have
// the field skipped.
func fields(b []byte, f func(n protowire.Number, t protowire.Type, v []byte) (int, error)) error {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		used, err := f(n, t, b)
		if err != nil {
			return err
		}
		if used < 0 {
			used = protowire.ConsumeFieldValue(n, t, b)
			if used < 0 {
				return protowire.ParseError(used)
			}
		}
		b = b[used:]
	}
	return nil
}

// A field reader: the value of one field of the given type, and its length.

func varint(t protowire.Type, b []byte) (uint64, int, error) {
	if t != protowire.VarintType {
		return 0, 0, fmt.Errorf("wire type %d where a varint was expected", t)
	}
	v, l := protowire.ConsumeVarint(b)
	if l < 0 {
		return 0, 0, protowire.ParseError(l)
	}
	return v, l, nil
}

func bytesField(t protowire.Type, b []byte) ([]byte, int, error) {
	if t != protowire.BytesType {
		return nil, 0, fmt.Errorf("wire type %d where bytes were expected", t)
	}
	v, l := protowire.ConsumeBytes(b)
	if l < 0 {
		return nil, 0, protowire.ParseError(l)
	}
	return v, l, nil
}

func decodeHeader(b []byte) (Header, error) {
	var h Header
	err := fields(b, func(n protowire.Number, t protowire.Type, v []byte) (int, error) {
		switch n {
		case 1, 2, 3, 4:
			x, l, err := varint(t, v)
			switch n {
			case 1:
				h.ClusterID = x
			case 2:
				h.MemberID = x
			case 3:
				h.Revision = int64(x)
			case 4:
				h.RaftTerm = x
			}
			return l, err
		}
		return -1, nil
	})
	return h, err
}

func decodeMember(b []byte) (Member, error) {
	var m Member
	err := fields(b, func(n protowire.Number, t protowire.Type, v []byte) (int, error) {
		switch n {
		case 1, 5:
			x, l, err := varint(t, v)
			if n == 1 {
				m.ID = x
			} else {
				m.IsLearner = x != 0
			}
			return l, err
		case 2, 3, 4:
			s, l, err := bytesField(t, v)
			switch n {
			case 2:
				m.Name = string(s)
			case 3:
				m.PeerURLs = append(m.PeerURLs, string(s))
			case 4:
				m.ClientURLs = append(m.ClientURLs, string(s))
			}
			return l, err
		}
		return -1, nil
	})
	return m, err
}

// membersAnswer decodes the answers of the member calls: a header (1) and
// the members, in field membersField; MemberAdd's answer also has the added
// member (field 2, returned as added).
func membersAnswer(b []byte, membersField protowire.Number) (h Header, added Member, members []Member, err error) {
	err = fields(b, func(n protowire.Number, t protowire.Type, v []byte) (int, error) {
		if n != 1 && n != 2 && n != membersField {
			return -1, nil
		}
		s, l, err := bytesField(t, v)
		if err != nil {
			return 0, err
		}
		switch {
		case n == 1:
			h, err = decodeHeader(s)
		case n == membersField:
			var m Member
			m, err = decodeMember(s)
			members = append(members, m)
		default: // 2, when members are not in field 2: the added member
			added, err = decodeMember(s)
		}
		return l, err
	})
	return h, added, members, err
}

func decodeStatus(b []byte) (*Status, error) {
	var st Status
	err := fields(b, func(n protowire.Number, t protowire.Type, v []byte) (int, error) {
		switch n {
		case 1, 2, 8:
			s, l, err := bytesField(t, v)
			if err != nil {
				return 0, err
			}
			switch n {
			case 1:
				st.Header, err = decodeHeader(s)
			case 2:
				st.Version = string(s)
			case 8:
				st.Errors = append(st.Errors, string(s))
			}
			return l, err
		case 3, 4, 5, 6, 7, 9, 10:
			x, l, err := varint(t, v)
			switch n {
			case 3:
				st.DBSize = int64(x)
			case 4:
				st.Leader = x
			case 5:
				st.RaftIndex = x
			case 6:
				st.RaftTerm = x
			case 7:
				st.RaftAppliedIndex = x
			case 9:
				st.DBSizeInUse = int64(x)
			case 10:
				st.IsLearner = x != 0
			}
			return l, err
		}
		return -1, nil
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// decodeCount reads a RangeResponse's count (4).
func decodeCount(b []byte) (int64, error) {
	var count int64
	err := fields(b, func(n protowire.Number, t protowire.Type, v []byte) (int, error) {
		if n != 4 {
			return -1, nil
		}
		x, l, err := varint(t, v)
		count = int64(x)
		return l, err
	})
	return count, err
}

// snapshotChunk is one SnapshotResponse: header (1), remaining_bytes (2),
// blob (3), version (4).
type snapshotChunk struct {
	remaining uint64
	blob      []byte
	version   string
}

func decodeSnapshotChunk(b []byte) (snapshotChunk, error) {
	var c snapshotChunk
	err := fields(b, func(n protowire.Number, t protowire.Type, v []byte) (int, error) {
		switch n {
		case 2:
			x, l, err := varint(t, v)
			c.remaining = x
			return l, err
		case 3, 4:
			s, l, err := bytesField(t, v)
			if n == 3 {
				c.blob = s
			} else {
				c.version = string(s)
			}
			return l, err
		}
		return -1, nil
	})
	return c, err
}
