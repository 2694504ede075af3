package etcdsnapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file writes the few records of etcd's storage formats a restored
// data folder needs: the write-ahead log's first segment and a raft
// snapshot file. They are protocol buffer messages (etcd's raftpb, walpb,
// snappb and etcdserverpb), encoded here field by field the way their
// generated code does: scalar fields always, in field order, bytes and
// sub-messages only when set (with protowire, as package etcdrpc encodes
// its requests).

// crcTable is the CRC-32 table etcd checksums its log and snapshots with.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// pbVarint appends field n as a varint.
func pbVarint(b []byte, n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
}

// pbBytes appends field n as length-delimited bytes.
func pbBytes(b []byte, n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
}

// raft's entry and change types used by a new cluster's log.
const (
	entryConfChange   = 1 // raftpb.EntryConfChange
	confChangeAddNode = 0 // raftpb.ConfChangeAddNode
)

// confChange encodes raftpb.ConfChange{Type: AddNode, NodeID: id,
// Context: context}: id (1), type (2), node id (3), context (4).
func confChange(id uint64, context []byte) []byte {
	b := pbVarint(nil, 1, 0)
	b = pbVarint(b, 2, confChangeAddNode)
	b = pbVarint(b, 3, id)
	return pbBytes(b, 4, context)
}

// raftEntry encodes raftpb.Entry: type (1), term (2), index (3), data (4).
func raftEntry(typ, term, index uint64, data []byte) []byte {
	b := pbVarint(nil, 1, typ)
	b = pbVarint(b, 2, term)
	b = pbVarint(b, 3, index)
	return pbBytes(b, 4, data)
}

// hardState encodes raftpb.HardState: term (1), vote (2), commit (3).
func hardState(term, vote, commit uint64) []byte {
	b := pbVarint(nil, 1, term)
	b = pbVarint(b, 2, vote)
	return pbVarint(b, 3, commit)
}

// confState encodes raftpb.ConfState with voters only: voters (1,
// repeated, unpacked), then auto leave (5, a bool, false), which the
// generated code writes even when false.
func confState(voters ...uint64) []byte {
	var b []byte
	for _, v := range voters {
		b = pbVarint(b, 1, v)
	}
	return pbVarint(b, 5, 0)
}

// raftSnapshot encodes raftpb.Snapshot{Data: data, Metadata:
// {ConfState: cs, Index: index, Term: term}}: data (1), metadata (2); the
// metadata's conf state (1), index (2), term (3).
func raftSnapshot(data, cs []byte, index, term uint64) []byte {
	md := pbBytes(nil, 1, cs)
	md = pbVarint(md, 2, index)
	md = pbVarint(md, 3, term)
	return pbBytes(pbBytes(nil, 1, data), 2, md)
}

// walSnapshot encodes walpb.Snapshot: index (1), term (2), conf state (3,
// when not nil).
func walSnapshot(index, term uint64, cs []byte) []byte {
	b := pbVarint(nil, 1, index)
	b = pbVarint(b, 2, term)
	if cs != nil {
		b = pbBytes(b, 3, cs)
	}
	return b
}

// walMetadata encodes etcdserverpb.Metadata: node id (1), cluster id (2).
func walMetadata(nodeID, clusterID uint64) []byte {
	return pbVarint(pbVarint(nil, 1, nodeID), 2, clusterID)
}

// The types of the write-ahead log's records (walpb.Record.Type).
const (
	walMetadataType = 1
	walEntryType    = 2
	walStateType    = 3
	walCrcType      = 4
	walSnapshotType = 5
)

// walSegmentBytes is the size etcd gives a log segment up front (64 MB).
const walSegmentBytes = 64 * 1000 * 1000

// walWriter builds the first segment of a write-ahead log in memory: each
// record is walpb.Record{Type, Crc, Data} after a little-endian 64-bit
// length, padded to 8 bytes (the length's top byte then holds 0x80 and
// the padding), and its Crc is the running CRC of every record's data so
// far.
type walWriter struct {
	buf []byte
	crc uint32
}

// record appends a record of type typ; data nil means none (a CRC record).
func (w *walWriter) record(typ uint64, data []byte) {
	w.crc = crc32.Update(w.crc, crcTable, data)
	rec := pbVarint(nil, 1, typ)
	rec = pbVarint(rec, 2, uint64(w.crc))
	if data != nil {
		rec = pbBytes(rec, 3, data)
	}
	size := uint64(len(rec))
	pad := (8 - len(rec)%8) % 8
	if pad != 0 {
		size |= uint64(0x80|pad) << 56
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, size)
	w.buf = append(w.buf, rec...)
	w.buf = append(w.buf, make([]byte, pad)...)
}

// writeFile writes the segment as dir/0000000000000000-0000000000000000.wal
// (sequence 0, first index 0), extended with zeros to walSegmentBytes as
// etcd's own segments are.
func (w *walWriter) writeFile(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	return writeNewFile(filepath.Join(dir, fmt.Sprintf("%016x-%016x.wal", 0, 0)), w.buf, walSegmentBytes)
}

// writeSnapFile writes the raft snapshot snap (raftpb.Snapshot) taken at
// term and index into dir as <term>-<index>.snap: snappb.Snapshot{Crc,
// Data}, crc (1) then data (2).
func writeSnapFile(dir string, term, index uint64, snap []byte) error {
	b := pbVarint(nil, 1, uint64(crc32.Update(0, crcTable, snap)))
	b = pbBytes(b, 2, snap)
	return writeNewFile(filepath.Join(dir, fmt.Sprintf("%016x-%016x.snap", term, index)), b, 0)
}

// writeNewFile creates path (which must not exist) with data, extended
// with zeros to size when that is longer, and flushes it. The restore
// writes into a folder of its own that is renamed into place whole, so a
// file need not be made atomically by itself.
func writeNewFile(path string, data []byte, size int64) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if size > int64(len(data)) {
		if err := f.Truncate(size); err != nil {
			return err
		}
	}
	return f.Sync()
}
