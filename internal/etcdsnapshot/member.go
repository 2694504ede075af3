package etcdsnapshot

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/types"
)

// newMember is the only member of a restored cluster, with the IDs etcd
// derives for it: the member's from its peer URLs and the cluster token,
// the cluster's from its members' IDs (the first 8 bytes, big-endian, of a
// SHA-1 of each), so that a member started with the same name, peer URLs
// and --initial-cluster-token agrees with the data.
type newMember struct {
	ID        types.ID
	ClusterID types.ID
	Name      string
	PeerURLs  []string // normalised and sorted, as etcd keeps them
}

// memberFor returns the member named name with peerURLs in a cluster made
// with token.
func memberFor(name string, peerURLs []string, token string) (newMember, error) {
	urls, err := types.NewURLs(peerURLs)
	if err != nil {
		return newMember{}, err
	}
	// types.NewURLs has sorted the URLs, as etcd sorts them for the ID.
	m := newMember{Name: name, PeerURLs: urls.StringSlice()}
	sum := sha1.Sum([]byte(strings.Join(m.PeerURLs, "") + token))
	m.ID = types.ID(binary.BigEndian.Uint64(sum[:8]))
	if m.ID == 0 {
		return newMember{}, fmt.Errorf("the peer URLs give the member the ID 0, which etcd does not accept")
	}
	sum = sha1.Sum(binary.BigEndian.AppendUint64(nil, uint64(m.ID)))
	m.ClusterID = types.ID(binary.BigEndian.Uint64(sum[:8]))
	return m, nil
}

// record is the member as etcd records it (in its database, and in the
// context of the log entry that adds it): {"id":…,"peerURLs":[…],"name":…}.
func (m newMember) record() ([]byte, error) {
	return json.Marshal(struct {
		ID       uint64   `json:"id"`
		PeerURLs []string `json:"peerURLs"`
		Name     string   `json:"name,omitempty"`
	}{uint64(m.ID), m.PeerURLs, m.Name})
}

// v2StoreJSON is etcd's version 2 store holding the cluster's membership,
// in the form etcd saves it into a raft snapshot (its store's JSON): the
// member's raft attributes created at index 1 under /0/members/<id>, an
// empty /1, the creation in the store's event history (1,000 slots) and
// its operation counters (the one failed get is etcd's check that no
// member was there before).
func (m newMember) v2StoreJSON() ([]byte, error) {
	attrs, err := json.Marshal(struct {
		PeerURLs []string `json:"peerURLs"`
	}{m.PeerURLs})
	if err != nil {
		return nil, err
	}
	value, err := json.Marshal(string(attrs))
	if err != nil {
		return nil, err
	}
	id := m.ID.String()
	node := func(path string, index int, value, children string) string {
		return fmt.Sprintf(`{"Path":%q,"CreatedIndex":%d,"ModifiedIndex":%d,"ExpireTime":"0001-01-01T00:00:00Z","Value":%s,"Children":%s}`,
			path, index, index, value, children)
	}
	key := "/0/members/" + id + "/raftAttributes"
	attrNode := node(key, 1, string(value), "null")
	memberNode := node("/0/members/"+id, 1, `""`, `{"raftAttributes":`+attrNode+`}`)
	members := node("/0/members", 1, `""`, `{"`+id+`":`+memberNode+`}`)
	root := node("/", 0, `""`, `{"0":`+node("/0", 0, `""`, `{"members":`+members+`}`)+`,"1":`+node("/1", 0, `""`, `{}`)+`}`)

	var b strings.Builder
	b.WriteString(`{"Root":` + root)
	b.WriteString(`,"WatcherHub":{"EventHistory":{"Queue":{"Events":[`)
	fmt.Fprintf(&b, `{"action":"create","node":{"key":%q,"value":%s,"modifiedIndex":1,"createdIndex":1}}`, key, value)
	b.WriteString(strings.Repeat(",null", 999))
	b.WriteString(`],"Size":1,"Front":0,"Back":1,"Capacity":1000},"StartIndex":1,"LastIndex":1}},"CurrentIndex":1`)
	b.WriteString(`,"Stats":{"getsSuccess":0,"getsFail":1,"setsSuccess":0,"setsFail":0,"deleteSuccess":0,"deleteFail":0,` +
		`"updateSuccess":0,"updateFail":0,"createSuccess":1,"createFail":0,"compareAndSwapSuccess":0,"compareAndSwapFail":0,` +
		`"compareAndDeleteSuccess":0,"compareAndDeleteFail":0,"expireCount":0,"watchers":0},"CurrentVersion":2}`)
	return []byte(b.String()), nil
}
