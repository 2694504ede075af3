package rootless

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
)

// The functions below manage one system account on its own (a user and a
// group of the same name), for components that must run as, or have their
// files owned by, a user of a well-known name: the etcd user of the
// CISHardening feature gate. A comment in the user's GECOS field marks the
// accounts kubeadm made, so that only those are ever removed.

// LookupAccount returns the IDs of the user name in etcDir's passwd file
// ("" for /etc), with the group called name when there is one (else the
// user's primary group); ok is false when there is no such user.
func LookupAccount(etcDir, name string) (ids IDs, ok bool, err error) {
	passwd, group, err := readTables(etcDir)
	if err != nil {
		return IDs{}, false, err
	}
	ids, ok = accountIDs(passwd, group, name)
	return ids, ok, nil
}

func accountIDs(passwd, group *table, name string) (IDs, bool) {
	e, ok := passwd.byName[name]
	if !ok || len(e) < 4 {
		return IDs{}, false
	}
	uid, err1 := strconv.ParseInt(e[2], 10, 64)
	gid, err2 := strconv.ParseInt(e[3], 10, 64)
	if err1 != nil || err2 != nil {
		return IDs{}, false
	}
	if g, ok := group.id(name); ok {
		gid = g
	}
	return IDs{UID: uid, GID: gid}, true
}

// EnsureAccount returns the IDs of the user name (see LookupAccount),
// making it first when it is missing: a group called name (unless there is
// one) and a user of that group with comment in its GECOS field, no home
// and no login shell, each with the lowest free ID of the system range
// (SYS_UID_MIN..SYS_UID_MAX and SYS_GID_MIN..SYS_GID_MAX of login.defs,
// 100..999 without them). A user that exists is used as it is, so running
// it again changes nothing. The group is written before the user.
func EnsureAccount(etcDir, name, comment string) (IDs, error) {
	passwd, group, err := readTables(etcDir)
	if err != nil {
		return IDs{}, err
	}
	if ids, ok := accountIDs(passwd, group, name); ok {
		return ids, nil
	}
	limits, err := readLoginDefs(etcFile(etcDir, "login.defs"))
	if err != nil {
		return IDs{}, err
	}
	gid, ok := group.id(name)
	if !ok {
		if gid, err = group.free(limits["SYS_GID_MIN"], limits["SYS_GID_MAX"]); err != nil {
			return IDs{}, err
		}
	}
	uid, err := passwd.free(limits["SYS_UID_MIN"], limits["SYS_UID_MAX"])
	if err != nil {
		return IDs{}, err
	}
	if !ok {
		group.add(entry{name, "x", strconv.FormatInt(gid, 10), name}, gid)
		if err := group.flush(); err != nil {
			return IDs{}, fmt.Errorf("adding the group %s: %w", name, err)
		}
	}
	passwd.add(entry{name, "x", strconv.FormatInt(uid, 10), strconv.FormatInt(gid, 10), comment, "", "/bin/false"}, uid)
	if err := passwd.flush(); err != nil {
		return IDs{}, fmt.Errorf("adding the user %s: %w", name, err)
	}
	return IDs{UID: uid, GID: gid}, nil
}

// MadeAccount reports whether etcDir's passwd file has the user name with
// comment in its GECOS field: one EnsureAccount made.
func MadeAccount(etcDir, name, comment string) (bool, error) {
	passwd, err := readTable(etcFile(etcDir, "passwd"), 2)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	e, ok := passwd.byName[name]
	return ok && len(e) > 4 && e[4] == comment, nil
}

// RemoveAccount deletes the user name when its GECOS field is comment (a
// user EnsureAccount made; any other is left alone), then the group called
// name when no user is left with it as primary group; the user goes first.
// It reports whether it removed the user. Running it again changes nothing.
func RemoveAccount(etcDir, name, comment string) (bool, error) {
	made, err := MadeAccount(etcDir, name, comment)
	if err != nil || !made {
		return false, err
	}
	passwd, group, err := readTables(etcDir)
	if err != nil {
		return false, err
	}
	passwd.drop([]string{name})
	if err := passwd.flush(); err != nil {
		return false, fmt.Errorf("removing the user %s: %w", name, err)
	}
	gid, ok := group.id(name)
	if !ok {
		return true, nil
	}
	for _, e := range passwd.byName {
		if len(e) > 3 && e[3] == strconv.FormatInt(gid, 10) {
			return true, nil // another user's primary group
		}
	}
	group.drop([]string{name})
	if err := group.flush(); err != nil {
		return true, fmt.Errorf("removing the group %s: %w", name, err)
	}
	return true, nil
}
