package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// healthKey is the key read to prove that a quorum answers; it need not
// exist.
const healthKey = "kubeadm-health-check"

// CheckHealth checks that the cluster works: the endpoints answer, know a
// leader, belong to the same cluster and report no alarm, and a
// linearizable read (which needs a quorum; etcd's client reads
// linearizably unless told otherwise) succeeds. As with upstream kubeadm
// v1.37, endpoints that do not answer or know no leader are tolerated
// while a quorum of the voting members answers (one member of three
// restarting, say). While a failure may pass (a member restarting, an
// election), it asks again until RetryTimeout; the error then names every
// endpoint that failed.
func (c *Client) CheckHealth(ctx context.Context) error {
	retryable := func(k errorKind) bool { return k == kindTransient }
	err := c.retry(ctx, retryable, func(ctx context.Context) error {
		return c.checkOnce(ctx)
	})
	if err != nil {
		return fmt.Errorf("etcd cluster at %s is not healthy: %w", strings.Join(c.endpoints, ","), err)
	}
	return nil
}

// checkOnce asks every endpoint once. The error is transient if any of the
// failures is.
func (c *Client) checkOnce(ctx context.Context) error {
	var errs, down []error
	kind := kindFatal
	fail := func(k errorKind, err error) {
		errs = append(errs, err)
		if k == kindTransient {
			kind = kindTransient
		}
	}
	// An endpoint that does not answer or knows no leader is only a
	// failure when too few voting members answer.
	downKind := kindFatal
	markDown := func(k errorKind, err error) {
		down = append(down, err)
		if k == kindTransient {
			downKind = kindTransient
		}
	}
	answering := map[string]bool{}
	clusterIDs := map[uint64][]string{}
	for _, ep := range c.endpoints {
		st, err := call(ctx, c, func(ctx context.Context) (*clientv3.StatusResponse, error) {
			return c.api.Status(ctx, ep)
		})
		switch {
		case err != nil:
			markDown(classify(ctx, err), fmt.Errorf("%s: %w", ep, err))
		case st.Leader == 0:
			markDown(kindTransient, fmt.Errorf("%s knows no leader", ep))
		case len(st.Errors) > 0:
			fail(kindFatal, fmt.Errorf("%s reports: %s", ep, strings.Join(st.Errors, "; ")))
		default:
			answering[ep] = true
			id := (*etcdserverpb.StatusResponse)(st).GetHeader().GetClusterId()
			clusterIDs[id] = append(clusterIDs[id], ep)
		}
	}
	if len(clusterIDs) > 1 {
		var groups []string
		for id, eps := range clusterIDs {
			groups = append(groups, fmt.Sprintf("%x: %s", id, strings.Join(eps, ",")))
		}
		slices.Sort(groups)
		fail(kindFatal, fmt.Errorf("the endpoints belong to different clusters (%s)", strings.Join(groups, "; ")))
	}
	if _, err := call(ctx, c, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return c.api.Get(ctx, healthKey, clientv3.WithCountOnly())
	}); err != nil {
		fail(classify(ctx, err), fmt.Errorf("linearizable read: %w", err))
	}
	if len(down) > 0 && (len(errs) > 0 || !c.quorumAnswers(ctx, answering)) {
		for _, err := range down {
			fail(downKind, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &classified{kind: kind, err: errors.Join(errs...)}
}

// quorumAnswers reports whether more than half of the cluster's voting
// members have a client URL among the answering endpoints.
func (c *Client) quorumAnswers(ctx context.Context, answering map[string]bool) bool {
	members, err := c.list(ctx)
	if err != nil {
		return false
	}
	voters, up := 0, 0
	for _, m := range members {
		if m.IsLearner {
			continue
		}
		voters++
		if slices.ContainsFunc(m.ClientURLs, func(u string) bool { return answering[u] }) {
			up++
		}
	}
	return voters > 0 && up > voters/2
}

// classified is an error whose kind is already decided.
type classified struct {
	kind errorKind
	err  error
}

func (e *classified) Error() string { return e.err.Error() }
func (e *classified) Unwrap() error { return e.err }
