package rootless

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// The users (each with a group of the same name) the components run as,
// in the order they are made, and the group allowed to read the
// service-account signing key.
const (
	EtcdUser              = "kubeadm-etcd"
	APIServerUser         = "kubeadm-kas"
	ControllerManagerUser = "kubeadm-kcm"
	SchedulerUser         = "kubeadm-ks"
	SAKeyReadersGroup     = "kubeadm-sa-key-readers"
)

// userOrder lists the users in creation order, with the component each
// runs.
func userOrder() []struct{ user, component string } {
	return []struct{ user, component string }{
		{EtcdUser, staticpod.Etcd}, {APIServerUser, staticpod.KubeAPIServer},
		{ControllerManagerUser, staticpod.KubeControllerManager}, {SchedulerUser, staticpod.KubeScheduler},
	}
}

// saKeyReaders are the members of the service-account key group.
func saKeyReaders() []string { return []string{APIServerUser, ControllerManagerUser} }

// defaultEtcDir is where the account files are when the caller names no
// other folder.
const defaultEtcDir = "/etc"

// etcFile is the path of one account file in etcDir ("" for /etc).
func etcFile(etcDir, name string) string {
	if etcDir == "" {
		etcDir = defaultEtcDir
	}
	return filepath.Join(etcDir, name)
}

// The system ID range when /etc/login.defs does not give one.
const (
	defaultSysIDMin = 100
	defaultSysIDMax = 999
)

// IDs are what one component runs as.
type IDs struct {
	UID, GID           int64
	SupplementalGroups []int64
}

// Accounts are the IDs of every component.
type Accounts struct {
	byComponent map[string]IDs
	// SAKeyReadersGID is the group that may read the service-account key.
	SAKeyReadersGID int64
}

// For returns the IDs component runs as.
func (a *Accounts) For(component string) (IDs, bool) {
	if a == nil {
		return IDs{}, false
	}
	ids, ok := a.byComponent[component]
	return ids, ok
}

// entry is one line of /etc/passwd or /etc/group, split on ":".
type entry []string

// table is a parsed /etc/passwd or /etc/group: the file's bytes, and its
// entries by name with the IDs in use.
type table struct {
	path    string
	raw     []byte
	mode    os.FileMode
	byName  map[string]entry
	usedIDs map[int64]bool
	idField int
}

func readTable(path string, idField int) (*table, error) {
	raw, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	t := &table{path: path, raw: raw, mode: mode, byName: map[string]entry{}, usedIDs: map[int64]bool{}, idField: idField}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e := entry(strings.Split(line, ":"))
		if len(e) <= idField {
			continue
		}
		t.byName[e[0]] = e
		if id, err := strconv.ParseInt(e[idField], 10, 64); err == nil {
			t.usedIDs[id] = true
		}
	}
	return t, sc.Err()
}

// id returns the ID of name's entry.
func (t *table) id(name string) (int64, bool) {
	e, ok := t.byName[name]
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(e[t.idField], 10, 64)
	return id, err == nil
}

// free returns the lowest ID of [min, max] no entry uses.
func (t *table) free(min, max int64) (int64, error) {
	for id := min; id <= max; id++ {
		if !t.usedIDs[id] {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%s: no free ID left between %d and %d", t.path, min, max)
}

// add appends an entry; the file is written by flush.
func (t *table) add(e entry, id int64) {
	t.byName[e[0]] = e
	t.usedIDs[id] = true
	if len(t.raw) > 0 && t.raw[len(t.raw)-1] != '\n' {
		t.raw = append(t.raw, '\n')
	}
	t.raw = append(t.raw, strings.Join(e, ":")+"\n"...)
}

// drop removes the lines of the entries named names, and reports whether
// there were any; the file is written by flush.
func (t *table) drop(names []string) bool {
	var kept []byte
	dropped := false
	for _, line := range bytes.SplitAfter(t.raw, []byte("\n")) {
		name, _, _ := bytes.Cut(line, []byte(":"))
		if slices.Contains(names, string(name)) {
			dropped = true
			delete(t.byName, string(name))
			continue
		}
		kept = append(kept, line...)
	}
	t.raw = kept
	return dropped
}

func (t *table) flush() error {
	return atomicfile.Write(t.path, t.raw, t.mode)
}

// Lookup returns the accounts already present in etcDir's passwd and group
// files ("" for /etc, as for every function here), nil when any is
// missing. It changes nothing.
func Lookup(etcDir string) (*Accounts, error) {
	passwd, group, err := readTables(etcDir)
	if err != nil {
		return nil, err
	}
	return accountsOf(passwd, group), nil
}

func readTables(etcDir string) (passwd, group *table, err error) {
	if passwd, err = readTable(etcFile(etcDir, "passwd"), 2); err != nil {
		return nil, nil, err
	}
	if group, err = readTable(etcFile(etcDir, "group"), 2); err != nil {
		return nil, nil, err
	}
	return passwd, group, nil
}

// accountsOf reads the IDs of every account, nil when one is missing.
func accountsOf(passwd, group *table) *Accounts {
	readers, ok := group.id(SAKeyReadersGroup)
	if !ok {
		return nil
	}
	a := &Accounts{byComponent: map[string]IDs{}, SAKeyReadersGID: readers}
	for _, u := range userOrder() {
		e, ok := passwd.byName[u.user]
		if !ok || len(e) < 4 {
			return nil
		}
		uid, err1 := strconv.ParseInt(e[2], 10, 64)
		gid, err2 := strconv.ParseInt(e[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil
		}
		ids := IDs{UID: uid, GID: gid}
		if slices.Contains(saKeyReaders(), u.user) {
			ids.SupplementalGroups = []int64{readers}
		}
		a.byComponent[u.component] = ids
	}
	return a
}

// Ensure makes the users and groups of every component that are missing
// from etcDir's passwd and group files, with the lowest free IDs of the
// system range (SYS_UID_MIN..SYS_UID_MAX and SYS_GID_MIN..SYS_GID_MAX of
// login.defs, 100..999 without them), and returns them all. Accounts that
// exist are used as they are, so running it again changes nothing.
func Ensure(etcDir string) (*Accounts, error) {
	passwd, group, err := readTables(etcDir)
	if err != nil {
		return nil, err
	}
	if a := accountsOf(passwd, group); a != nil {
		return a, nil
	}
	limits, err := readLoginDefs(etcFile(etcDir, "login.defs"))
	if err != nil {
		return nil, err
	}
	groupsChanged, usersChanged := false, false
	addGroup := func(name string, members []string) error {
		if _, ok := group.id(name); ok {
			return nil
		}
		gid, err := group.free(limits["SYS_GID_MIN"], limits["SYS_GID_MAX"])
		if err != nil {
			return err
		}
		group.add(entry{name, "x", strconv.FormatInt(gid, 10), strings.Join(members, ",")}, gid)
		groupsChanged = true
		return nil
	}
	for _, u := range userOrder() {
		if err := addGroup(u.user, []string{u.user}); err != nil {
			return nil, err
		}
	}
	if err := addGroup(SAKeyReadersGroup, saKeyReaders()); err != nil {
		return nil, err
	}
	for _, u := range userOrder() {
		if _, ok := passwd.byName[u.user]; ok {
			continue
		}
		gid, _ := group.id(u.user)
		uid, err := passwd.free(limits["SYS_UID_MIN"], limits["SYS_UID_MAX"])
		if err != nil {
			return nil, err
		}
		passwd.add(entry{u.user, "x", strconv.FormatInt(uid, 10), strconv.FormatInt(gid, 10), "", "", "/bin/false"}, uid)
		usersChanged = true
	}
	// Groups first: a user line never names a group that is not there.
	if groupsChanged {
		if err := group.flush(); err != nil {
			return nil, fmt.Errorf("adding the control plane's groups: %w", err)
		}
	}
	if usersChanged {
		if err := passwd.flush(); err != nil {
			return nil, fmt.Errorf("adding the control plane's users: %w", err)
		}
	}
	a := accountsOf(passwd, group)
	if a == nil {
		return nil, errors.New("the control plane's users and groups are incomplete after adding them")
	}
	return a, nil
}

// readLoginDefs returns the system ID ranges of login.defs, with the
// defaults for what it does not set (or when it does not exist).
func readLoginDefs(path string) (map[string]int64, error) {
	limits := map[string]int64{
		"SYS_UID_MIN": defaultSysIDMin, "SYS_UID_MAX": defaultSysIDMax,
		"SYS_GID_MIN": defaultSysIDMin, "SYS_GID_MAX": defaultSysIDMax,
	}
	raw, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return limits, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if _, ok := limits[fields[0]]; !ok {
			continue
		}
		v, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not a number: %q", path, fields[0], fields[1])
		}
		limits[fields[0]] = v
	}
	return limits, nil
}

// Present reports whether any of the components' users or groups is in
// etcDir's passwd or group file.
func Present(etcDir string) (bool, error) {
	passwd, group, err := readTables(etcDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	for _, name := range accountNames() {
		if _, ok := passwd.byName[name]; ok {
			return true, nil
		}
		if _, ok := group.byName[name]; ok {
			return true, nil
		}
	}
	return false, nil
}

// Remove deletes the components' users and groups from etcDir's passwd
// and group files (users first), leaving every other line as it was.
// Running it again changes nothing.
func Remove(etcDir string) error {
	names := accountNames()
	for _, file := range []string{"passwd", "group"} {
		t, err := readTable(etcFile(etcDir, file), 2)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !t.drop(names) {
			continue
		}
		if err := t.flush(); err != nil {
			return fmt.Errorf("removing the control plane's accounts from %s: %w", t.path, err)
		}
	}
	return nil
}

// accountNames are the users' names (each also a group) and the
// service-account key group.
func accountNames() []string {
	var names []string
	for _, u := range userOrder() {
		names = append(names, u.user)
	}
	return append(names, SAKeyReadersGroup)
}
