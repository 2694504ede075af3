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

// Image is a single-layer image made of host files.
type Image struct {
	// Ref is the full reference the image is imported as
	// ("registry.k8s.io/kube-apiserver:v1.36.3").
	Ref        string
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
	for _, img := range images {
		layer, err := layerTar(img.Files)
		if err != nil {
			return fmt.Errorf("image %s: %w", img.Ref, err)
		}
		layerDigest, err := blob(layer)
		if err != nil {
			return err
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
			"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
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
			"layers":        []descriptor{{MediaType: mediaTypeLayer, Digest: layerDigest, Size: int64(len(layer))}},
		}
		manJSON, err := json.Marshal(manifest)
		if err != nil {
			return err
		}
		manDigest, err := blob(manJSON)
		if err != nil {
			return err
		}
		tag := img.Ref[strings.LastIndex(img.Ref, ":")+1:]
		index.Manifests = append(index.Manifests, descriptor{
			MediaType:   mediaTypeManifest,
			Digest:      manDigest,
			Size:        int64(len(manJSON)),
			Annotations: map[string]string{annotationImageName: img.Ref, annotationRefName: tag},
			Platform:    &platform{Architecture: "amd64", OS: "linux"},
		})
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
