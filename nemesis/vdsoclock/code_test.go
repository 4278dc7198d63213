package vdsoclock

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// code.go must be what gen.sh makes of routine.asm: an edit of one without
// the other would patch processes with stale code.
func TestCodeIsRoutineAssembled(t *testing.T) {
	for _, tool := range []string{"as", "objcopy", "nm", "od", "gofmt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s to assemble routine.asm with", tool)
		}
	}
	out := filepath.Join(t.TempDir(), "code.go")
	if b, err := exec.Command("./gen.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("code.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("code.go is not routine.asm assembled: run go generate")
	}
}

// The layout the Go side writes must be the one the code reads: entries in
// the code, before the data block; the sequence number, then the table
// aligned, ending the routine; all within the page mmap gives.
func TestLayout(t *testing.T) {
	for _, r := range replaced {
		if r.entry >= offSeq {
			t.Errorf("%s's entry %#x is past the code", r.name, r.entry)
		}
	}
	if offSeq%8 != 0 || offTable != offSeq+8 {
		t.Errorf("seq at %#x, table at %#x: want the table 8 bytes past an aligned seq", offSeq, offTable)
	}
	if got, want := len(routine), offTable+len(table{}.bytes()); got != want {
		t.Errorf("routine is %d bytes, want code and data block, %d", got, want)
	}
	if len(routine) > pageSize {
		t.Errorf("routine is %d bytes: more than the page", len(routine))
	}
	if !bytes.Equal(routine[offSeq:], make([]byte, len(routine)-offSeq)) {
		t.Error("the data block is not zero: a fresh page would skew")
	}
}

func TestJump(t *testing.T) {
	j := jump(0x7f0011223344)
	if len(j) != jumpLen {
		t.Fatalf("jump is %d bytes, want %d", len(j), jumpLen)
	}
	// movabs rax, imm64 (48 b8) then jmp rax (ff e0).
	if !bytes.Equal(j[:2], []byte{0x48, 0xb8}) || !bytes.Equal(j[10:], []byte{0xff, 0xe0}) {
		t.Fatalf("jump % x: not movabs rax; jmp rax", j)
	}
	if got := binary.LittleEndian.Uint64(j[2:10]); got != 0x7f0011223344 {
		t.Fatalf("jump to %#x, want 0x7f0011223344", got)
	}
}
