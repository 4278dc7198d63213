package vdsoclock

import (
	"bytes"
	"debug/elf"
	"os"
	"runtime"
	"testing"
)

// ownVDSO is this test process's vDSO image, as a target's is read.
func ownVDSO(t *testing.T) []byte {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("x86-64 Linux vDSO only")
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	start, end, ok := vdsoRange(string(maps))
	if !ok {
		t.Fatal("no [vdso] in /proc/self/maps")
	}
	f, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := make([]byte, end-start)
	if _, err := f.ReadAt(img, int64(start)); err != nil {
		t.Fatal(err)
	}
	return img
}

func TestVdsoSymbols(t *testing.T) {
	img := ownVDSO(t)
	syms, err := vdsoSymbols(img)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	text := f.Section(".text")
	for _, r := range replaced {
		s, ok := syms[r.name]
		if !ok {
			t.Errorf("no %s", r.name)
			continue
		}
		if s.off < text.Offset || s.off+s.size > text.Offset+text.Size {
			t.Errorf("%s at %#x+%d lies outside .text", r.name, s.off, s.size)
		}
	}
	off, err := syscallAt(img)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img[off:off+2], []byte{0x0f, 0x05}) {
		t.Fatalf("syscallAt = %#x: % x", off, img[off:off+2])
	}
}

func TestVdsoSymbolsBadImage(t *testing.T) {
	if _, err := vdsoSymbols([]byte("not an ELF file")); err == nil {
		t.Fatal("parsed garbage")
	}
	img := ownVDSO(t)
	if _, err := vdsoSymbols(img[:64]); err == nil {
		t.Fatal("parsed a truncated vDSO")
	}
}
