// Package etcdtest holds test helpers for etcd's data folders: what etcd
// reads from one, as text to compare, the IDs its log records, and a
// folder made a mount point. Tests only; product code never imports it.
package etcdtest
