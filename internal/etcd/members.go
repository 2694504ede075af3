package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one member of the etcd cluster.
type Member struct {
	// ID is the member's ID, which etcd shows in hexadecimal.
	ID uint64
	// Name is the member's --name (kubeadm's node name). etcd learns it
	// only when the member first talks to the cluster: a member that was
	// added but never started has none.
	Name string
	// PeerURLs are where the other members reach it; ClientURLs are where
	// clients do (none until it has started).
	PeerURLs, ClientURLs []string
	// IsLearner: the member receives the data but does not vote.
	IsLearner bool
}

// Started reports whether the member has ever run (etcd knows its name).
func (m Member) Started() bool { return m.Name != "" }

// HexID is the ID as etcd and etcdctl write it.
func (m Member) HexID() string { return strconv.FormatUint(m.ID, 16) }

// String names the member for messages.
func (m Member) String() string {
	role := "member"
	if m.IsLearner {
		role = "learner"
	}
	if !m.Started() {
		return fmt.Sprintf("unstarted %s %s (%s)", role, m.HexID(), strings.Join(m.PeerURLs, ","))
	}
	return fmt.Sprintf("%s %q (%s, %s)", role, m.Name, m.HexID(), strings.Join(m.PeerURLs, ","))
}

// hasPeerURL reports whether peerURL is one of the member's peer URLs.
func (m Member) hasPeerURL(peerURL string) bool {
	return slices.ContainsFunc(m.PeerURLs, func(u string) bool { return sameURL(u, peerURL) })
}

func memberOf(m *etcdserverpb.Member) Member {
	if m == nil {
		return Member{}
	}
	return Member{
		ID:         m.ID,
		Name:       m.Name,
		PeerURLs:   slices.Clone(m.PeerURLs),
		ClientURLs: slices.Clone(m.ClientURLs),
		IsLearner:  m.IsLearner,
	}
}

func membersOf(ms []*etcdserverpb.Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, memberOf(m))
	}
	return out
}

// FindByPeerURL returns the member that has peerURL among its peer URLs.
func FindByPeerURL(members []Member, peerURL string) (Member, bool) {
	for _, m := range members {
		if m.hasPeerURL(peerURL) {
			return m, true
		}
	}
	return Member{}, false
}

// FindByName returns the started member called name.
func FindByName(members []Member, name string) (Member, bool) {
	for _, m := range members {
		if m.Started() && m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// InitialCluster returns the --initial-cluster value for the etcd of the
// member with peerURL, called name, that joins a cluster whose members
// (as AddLearner returned them) are given: name=URL for every peer URL of
// every member, sorted. The joining member is included even if members
// lacks it.
// Another member that never started has no name yet; its ID in
// hexadecimal stands in, which etcd accepts since it matches members by
// peer URL and only needs its own name to be right.
func InitialCluster(members []Member, name, peerURL string) string {
	type entry struct{ name, url string }
	var entries []entry
	self := false
	for _, m := range members {
		n := m.Name
		switch {
		case m.hasPeerURL(peerURL):
			n, self = name, true
		case n == "":
			n = m.HexID()
		}
		for _, u := range m.PeerURLs {
			entries = append(entries, entry{n, u})
		}
	}
	if !self {
		entries = append(entries, entry{name, peerURL})
	}
	// etcd lists members by ID, which is random for a new one; sorted, the
	// value (and the manifest holding it) is the same on every run.
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.url, b.url)
	})
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		parts = append(parts, e.name+"="+e.url)
	}
	return strings.Join(parts, ",")
}

// list asks for the members once, with CallTimeout.
func (c *Client) list(ctx context.Context) ([]Member, error) {
	resp, err := call(ctx, c, func(ctx context.Context) (*clientv3.MemberListResponse, error) {
		return c.api.MemberList(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	return membersOf(resp.Members), nil
}

// Members returns the cluster's members, as the leader knows them
// (a linearizable read). Transient failures are retried.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var members []Member
	err := c.retry(ctx, isTransient, func(ctx context.Context) error {
		var err error
		members, err = c.list(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return members, nil
}

func isTransient(k errorKind) bool { return k == kindTransient }

// AddLearner announces a learner called name with peerURL and returns it,
// with every member of the cluster after the change (for InitialCluster).
//
// It is idempotent: a member that already has peerURL is returned as it is,
// learner or not, unless it has started under another name. A started
// member called name with other peer URLs is refused: that is another
// machine (or this one before its address changed) and must be removed
// first. Answers that another join explains (too many learners, not enough
// started members) and transient ones are retried until RetryTimeout.
func (c *Client) AddLearner(ctx context.Context, name, peerURL string) (Member, []Member, error) {
	if name == "" {
		return Member{}, nil, errors.New("adding an etcd learner: the member name is empty")
	}
	if err := CheckURL(peerURL); err != nil {
		return Member{}, nil, fmt.Errorf("adding etcd learner %q: %w", name, err)
	}
	var added Member
	var members []Member
	retryable := func(k errorKind) bool { return retriedWhileMembersChange(k) || k == kindPeerURLExists }
	err := c.retry(ctx, retryable, func(ctx context.Context) error {
		current, err := c.list(ctx)
		if err != nil {
			return err
		}
		if m, ok, err := alreadyThere(current, name, peerURL); err != nil || ok {
			added, members = m, current
			return err
		}
		resp, err := call(ctx, c, func(ctx context.Context) (*clientv3.MemberAddResponse, error) {
			return c.api.MemberAddAsLearner(ctx, []string{peerURL})
		})
		if err != nil {
			// What etcd answered, even if the retry's time ran out
			// meanwhile (the name then still helps).
			if classify(context.Background(), err) == kindTooManyLearners {
				return fmt.Errorf("another member is still a learner (%s): %w", describeLearners(current), err)
			}
			return err
		}
		added, members = memberOf(resp.Member), membersOf(resp.Members)
		if _, ok := FindByPeerURL(members, peerURL); !ok {
			members = append(members, added)
		}
		return nil
	})
	if err != nil {
		return Member{}, nil, fmt.Errorf("adding etcd learner %q with peer URL %s: %w", name, peerURL, err)
	}
	return added, members, nil
}

// alreadyThere finds the member AddLearner would add among members, or the
// member that stands in its way.
func alreadyThere(members []Member, name, peerURL string) (Member, bool, error) {
	if m, ok := FindByPeerURL(members, peerURL); ok {
		if m.Started() && m.Name != name {
			return Member{}, false, fmt.Errorf("peer URL %s already belongs to %s; remove that member first if the address now belongs to this node", peerURL, m)
		}
		return m, true, nil
	}
	if m, ok := FindByName(members, name); ok {
		return Member{}, false, fmt.Errorf("%s already exists with other peer URLs: either another machine uses the name %q or this node's address changed; remove that member first (kubeadm reset on that node, or etcdctl member remove %s)",
			m, name, m.HexID())
	}
	return Member{}, false, nil
}

func describeLearners(members []Member) string {
	var ls []string
	for _, m := range members {
		if m.IsLearner {
			ls = append(ls, m.String())
		}
	}
	if len(ls) == 0 {
		return "none listed"
	}
	return strings.Join(ls, "; ")
}

// PromoteLearner makes the learner with id a voting member and returns it.
// etcd promotes a learner only once it has caught up with the leader, so
// the promotion is asked again, with the back-off, until etcd agrees or
// RetryTimeout passes; that is also how long the learner may take to start
// and catch up. A member that already votes is returned as it is; an
// unknown ID is an error.
func (c *Client) PromoteLearner(ctx context.Context, id uint64) (Member, error) {
	var promoted Member
	retryable := func(k errorKind) bool { return retriedWhileMembersChange(k) || k == kindLearnerNotReady }
	err := c.retry(ctx, retryable, func(ctx context.Context) error {
		members, err := c.list(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(members, func(m Member) bool { return m.ID == id })
		if i < 0 {
			return errors.New("no such member")
		}
		if promoted = members[i]; !promoted.IsLearner {
			return nil
		}
		_, err = call(ctx, c, func(ctx context.Context) (*clientv3.MemberPromoteResponse, error) {
			return c.api.MemberPromote(ctx, id)
		})
		switch classify(ctx, err) {
		case kindNotLearner:
			// Promoted meanwhile, by an earlier attempt whose answer was
			// lost.
			err = nil
		case kindMemberNotFound:
			return fmt.Errorf("the member was removed meanwhile: %w", err)
		case kindLearnerNotReady:
			return fmt.Errorf("%s has not caught up with the leader yet: %w", promoted, err)
		}
		if err != nil {
			return err
		}
		promoted.IsLearner = false
		return nil
	})
	if err != nil {
		return Member{}, fmt.Errorf("promoting etcd learner %x: %w", id, err)
	}
	return promoted, nil
}

// RemoveByName removes the started member called name. See remove.
func (c *Client) RemoveByName(ctx context.Context, name string) (Member, bool, error) {
	if name == "" {
		return Member{}, false, errors.New("removing an etcd member: the name is empty")
	}
	m, found, err := c.remove(ctx, func(m Member) bool { return m.Started() && m.Name == name })
	if err != nil {
		return Member{}, false, fmt.Errorf("removing etcd member %q: %w", name, err)
	}
	return m, found, nil
}

// RemoveByPeerURL removes the member with peerURL, started or not. See
// remove.
func (c *Client) RemoveByPeerURL(ctx context.Context, peerURL string) (Member, bool, error) {
	if err := CheckURL(peerURL); err != nil {
		return Member{}, false, fmt.Errorf("removing an etcd member: %w", err)
	}
	m, found, err := c.remove(ctx, func(m Member) bool { return m.hasPeerURL(peerURL) })
	if err != nil {
		return Member{}, false, fmt.Errorf("removing the etcd member with peer URL %s: %w", peerURL, err)
	}
	return m, found, nil
}

// remove removes the member pick selects and returns it, with found set.
// It is idempotent: no such member is not an error (found is false), and
// neither is a member that disappears meanwhile. The cluster's only voting
// member is not removed (ErrOnlyVoter). etcd refuses a removal that would
// cost the quorum among the started members; that answer and transient
// ones are retried until RetryTimeout.
func (c *Client) remove(ctx context.Context, pick func(Member) bool) (Member, bool, error) {
	var removed Member
	found := false
	err := c.retry(ctx, retriedWhileMembersChange, func(ctx context.Context) error {
		members, err := c.list(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(members, pick)
		if i < 0 {
			return nil
		}
		target := members[i]
		if !target.IsLearner && voters(members) == 1 {
			return fmt.Errorf("%s: %w", target, ErrOnlyVoter)
		}
		removed, found = target, true
		_, err = call(ctx, c, func(ctx context.Context) (*clientv3.MemberRemoveResponse, error) {
			return c.api.MemberRemove(ctx, target.ID)
		})
		if classify(ctx, err) == kindMemberNotFound {
			return nil
		}
		return err
	})
	if err != nil {
		return Member{}, false, err
	}
	return removed, found, nil
}

func voters(members []Member) int {
	n := 0
	for _, m := range members {
		if !m.IsLearner {
			n++
		}
	}
	return n
}
