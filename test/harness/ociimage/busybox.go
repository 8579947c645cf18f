package ociimage

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// BusyboxPath is where Debian's busybox-static package installs busybox.
const BusyboxPath = "/bin/busybox"

// BusyboxApplets are the commands the busybox image links to /bin/busybox.
var BusyboxApplets = []string{
	"[", "ash", "awk", "basename", "cat", "chmod", "cp", "cut", "date", "dd",
	"df", "dirname", "du", "echo", "env", "false", "find", "grep", "head",
	"hostname", "httpd", "id", "ifconfig", "ip", "kill", "ln", "ls", "mkdir",
	"mount", "mv", "nc", "nslookup", "ping", "printf", "ps", "pwd", "rm",
	"rmdir", "sed", "seq", "sh", "sleep", "sort", "stat", "tail", "tee",
	"test", "timeout", "top", "touch", "tr", "true", "uname", "wc", "wget",
	"whoami", "yes",
}

// BusyboxImage returns a "busybox:latest" image made from the static busybox
// binary at BusyboxPath: /bin/busybox with the applets of BusyboxApplets as
// symlinks, /etc/passwd and /etc/group (root, nobody), /tmp and the usual
// mount points, and Cmd ["sh"]. It fails, naming the package to install,
// when the binary is missing or not statically linked.
func BusyboxImage() (Image, error) {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Image{}, errNoBusybox
		}
		return Image{}, fmt.Errorf("ociimage: reading %s: %w", BusyboxPath, err)
	}
	if err := checkStatic(bin); err != nil {
		return Image{}, err
	}
	files := []File{
		{Path: "bin/busybox", Data: bin, Mode: 0o755},
		{Path: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "etc/group", Data: []byte("root:x:0:\nnobody:x:65534:\n")},
		{Path: "tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
		{Path: "root", Dir: true, Mode: 0o700},
	}
	for _, d := range []string{"proc", "sys", "dev", "etc", "var", "usr/bin"} {
		files = append(files, File{Path: d, Dir: true})
	}
	for _, a := range BusyboxApplets {
		files = append(files, File{Path: "bin/" + a, Symlink: "busybox"})
	}
	return Image{
		RepoTags: []string{"busybox:latest"},
		Files:    files,
		Config: Config{
			Cmd: []string{"sh"},
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		},
	}, nil
}

// BusyboxArchive returns BusyboxImage as a docker-archive tarball, ready for
// a runtime's image import.
func BusyboxArchive() ([]byte, error) {
	img, err := BusyboxImage()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := WriteDockerArchive(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic fails when bin is not an ELF executable without a program
// interpreter: a dynamically linked busybox (Debian's "busybox" package)
// cannot run in an image that holds no libc.
func checkStatic(bin []byte) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("ociimage: %s is not an ELF executable (%v): install the Debian package busybox-static", BusyboxPath, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("ociimage: %s is dynamically linked: install the Debian package busybox-static", BusyboxPath)
		}
	}
	return nil
}
