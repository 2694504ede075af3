package testbed

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// Media types of the OCI image layout (image-spec v1).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	// annotationImageName is what containerd's importer names an image by.
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// epoch dates every entry of the archives, so the same inputs always give
// the same digests and re-importing an image is a no-op for containerd.
var epoch = time.Unix(0, 0).UTC()

// FileKind tells what an image file is.
type FileKind int

// The kinds of files an image layer holds.
const (
	RegularFile FileKind = iota
	Directory
	Symlink
)

// ImageFile is one entry of an image's only layer.
type ImageFile struct {
	// Path inside the image, absolute ("/usr/local/bin/etcd").
	Path string
	Kind FileKind
	// Source is the host file a RegularFile is copied from; Data is used
	// instead when Source is empty.
	Source string
	Data   []byte
	// Target of a Symlink.
	Target string
	// Mode of the entry (0o755 when zero for files and folders).
	Mode os.FileMode
}

// Image is an image made of host files: one layer of Files, on top of
// Parent's layers when it has a parent.
type Image struct {
	// Ref is the full reference the image is imported as
	// ("registry.k8s.io/kube-apiserver:v1.36.3").
	Ref string
	// Also are more references naming the same image (other tags).
	Also []string
	// Parent's layers come first; only its files count, not its
	// configuration. Images of one archive that share a parent share
	// its layers' blobs.
	Parent     *Image
	Files      []ImageFile
	Env        []string
	Entrypoint []string
	// Cmd is the image's default arguments (after Entrypoint).
	Cmd []string
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// WriteArchive writes images as one OCI image layout packed in a tar
// stream, the form "ctr images import" reads: each image has one
// uncompressed layer (its digest is also its diff ID), an image config and
// a manifest, and index.json names each manifest with the
// io.containerd.image.name annotation. The output depends only on the
// inputs.
func WriteArchive(w io.Writer, images ...Image) error {
	out := tar.NewWriter(w)
	written := map[string]bool{}
	blob := func(data []byte) (string, error) {
		sum := sha256.Sum256(data)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		if written[digest] {
			return digest, nil
		}
		written[digest] = true
		return digest, writeTarFile(out, "blobs/sha256/"+hex.EncodeToString(sum[:]), data, 0o644)
	}
	if err := writeTarFile(out, "blobs", nil, 0); err != nil {
		return err
	}
	if err := writeTarFile(out, "blobs/sha256", nil, 0); err != nil {
		return err
	}
	var index struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}
	index.SchemaVersion, index.MediaType = 2, mediaTypeIndex
	// layers describes an image's layers, parents first; a blob is
	// written once per archive. The layer of an image without parent is
	// known by its files' slice (the same backing array and length): it
	// may be another image's parent in the archive too, and is made once.
	type filesID struct {
		first *ImageFile
		n     int
	}
	made := map[filesID]descriptor{}
	var layers func(img *Image) ([]descriptor, error)
	layers = func(img *Image) ([]descriptor, error) {
		var id filesID
		if img.Parent == nil && len(img.Files) > 0 {
			id = filesID{&img.Files[0], len(img.Files)}
			if l, ok := made[id]; ok {
				return []descriptor{l}, nil
			}
		}
		var out []descriptor
		if img.Parent != nil {
			parent, err := layers(img.Parent)
			if err != nil {
				return nil, err
			}
			out = append(out, parent...)
		}
		layer, err := layerTar(img.Files)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Ref, err)
		}
		digest, err := blob(layer)
		if err != nil {
			return nil, err
		}
		l := descriptor{MediaType: mediaTypeLayer, Digest: digest, Size: int64(len(layer))}
		if id.first != nil {
			made[id] = l
		}
		return append(out, l), nil
	}
	for i := range images {
		img := &images[i]
		imgLayers, err := layers(img)
		if err != nil {
			return err
		}
		var diffIDs []string
		for _, l := range imgLayers {
			diffIDs = append(diffIDs, l.Digest)
		}
		runConfig := map[string]any{"Env": img.Env, "Entrypoint": img.Entrypoint}
		if len(img.Cmd) > 0 {
			runConfig["Cmd"] = img.Cmd
		}
		cfg := map[string]any{
			"architecture": "amd64",
			"os":           "linux",
			"created":      epoch.Format(time.RFC3339),
			"config":       runConfig,
			"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
		}
		cfgJSON, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		cfgDigest, err := blob(cfgJSON)
		if err != nil {
			return err
		}
		manifest := map[string]any{
			"schemaVersion": 2,
			"mediaType":     mediaTypeManifest,
			"config":        descriptor{MediaType: mediaTypeConfig, Digest: cfgDigest, Size: int64(len(cfgJSON))},
			"layers":        imgLayers,
		}
		manJSON, err := json.Marshal(manifest)
		if err != nil {
			return err
		}
		manDigest, err := blob(manJSON)
		if err != nil {
			return err
		}
		for _, ref := range append([]string{img.Ref}, img.Also...) {
			tag := ref[strings.LastIndex(ref, ":")+1:]
			index.Manifests = append(index.Manifests, descriptor{
				MediaType:   mediaTypeManifest,
				Digest:      manDigest,
				Size:        int64(len(manJSON)),
				Annotations: map[string]string{annotationImageName: ref, annotationRefName: tag},
				Platform:    &platform{Architecture: "amd64", OS: "linux"},
			})
		}
	}
	idx, err := json.Marshal(index)
	if err != nil {
		return err
	}
	if err := writeTarFile(out, "oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return err
	}
	if err := writeTarFile(out, "index.json", idx, 0o644); err != nil {
		return err
	}
	return out.Close()
}

// layerTar builds an image's layer: parent folders first, entries sorted.
func layerTar(files []ImageFile) ([]byte, error) {
	entries := map[string]ImageFile{}
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean(f.Path), "/")
		if p == "" || p == "." {
			return nil, fmt.Errorf("image file %q: not a path inside the image", f.Path)
		}
		entries[p] = f
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if _, ok := entries[dir]; !ok {
				entries[dir] = ImageFile{Path: "/" + dir, Kind: Directory}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		f := entries[name]
		mode := int64(f.Mode.Perm())
		if mode == 0 {
			mode = 0o755
		}
		for bit, tarBit := range map[os.FileMode]int64{os.ModeSetuid: 0o4000, os.ModeSetgid: 0o2000, os.ModeSticky: 0o1000} {
			if f.Mode&bit != 0 {
				mode |= tarBit
			}
		}
		hdr := &tar.Header{Name: name, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}
		switch f.Kind {
		case Directory:
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
		case Symlink:
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Target, 0o777
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
		default:
			data := f.Data
			if f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					return nil, fmt.Errorf("reading %s for the image: %w", f.Source, err)
				}
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTarFile writes one entry of the outer archive (a folder when data
// is nil and mode is 0).
func writeTarFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if data == nil && mode == 0 {
		hdr.Name, hdr.Typeflag, hdr.Mode = name+"/", tar.TypeDir, 0o755
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing %s into the image archive: %w", name, err)
	}
	if len(data) > 0 {
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("writing %s into the image archive: %w", name, err)
		}
	}
	return nil
}
