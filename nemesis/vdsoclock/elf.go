package vdsoclock

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
)

// The vDSO functions that are replaced, each by the routine's entry for it.
// Go's runtime calls only __vdso_clock_gettime; glibc calls all three.
var replaced = []struct {
	name  string
	entry uint64 // offset of the replacement in routine
}{
	{"__vdso_clock_gettime", offClockGettime},
	{"__vdso_gettimeofday", offGettimeofday},
	{"__vdso_time", offTime},
}

// jumpLen is the length of jump: movabs rax, imm64; jmp rax. rax may be
// clobbered: it is the return register of every function replaced.
const jumpLen = 12

// jump is the code written over the start of a vDSO function: an absolute
// jump to to, which works wherever the page landed.
func jump(to uint64) []byte {
	b := []byte{0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0}
	for i := range 8 {
		b[2+i] = byte(to >> (8 * i))
	}
	return b
}

// symbol is a function of a vDSO image: where it starts, from the start of
// the mapping, and how long it is.
type symbol struct {
	off, size uint64
}

// vdsoSymbols reads the dynamic symbols of a vDSO image as mapped (the
// kernel maps the whole ELF file, section headers included), keeping the
// functions in replaced. A symbol's value is relative to the address the
// image was linked at, which is the first loaded segment's.
func vdsoSymbols(img []byte) (map[string]symbol, error) {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("vDSO: %w", err)
	}
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("vDSO: machine %s, want %s", f.Machine, elf.EM_X86_64)
	}
	var base uint64
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 {
			base, found = p.Vaddr, true
			break
		}
	}
	if !found {
		return nil, errors.New("vDSO: no segment loads its start")
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("vDSO: %w", err)
	}
	out := map[string]symbol{}
	for _, s := range syms {
		for _, r := range replaced {
			if s.Name == r.name && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value >= base {
				out[s.Name] = symbol{off: s.Value - base, size: s.Size}
			}
		}
	}
	if _, ok := out[replaced[0].name]; !ok {
		return nil, fmt.Errorf("vDSO: no %s", replaced[0].name)
	}
	for name, s := range out {
		if s.size < jumpLen || s.off+s.size > uint64(len(img)) {
			return nil, fmt.Errorf("vDSO: %s is %d bytes at %#x: no room for a %d-byte jump", name, s.size, s.off, jumpLen)
		}
	}
	return out, nil
}

// syscallAt is the offset of a syscall instruction (0f 05) in a vDSO
// image's code, which an injected system call executes: the vDSO's own
// fallbacks have one, so nothing need be written into the process to run
// one.
func syscallAt(img []byte) (uint64, error) {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return 0, fmt.Errorf("vDSO: %w", err)
	}
	text := f.Section(".text")
	if text == nil || text.Offset+text.Size > uint64(len(img)) {
		return 0, errors.New("vDSO: no .text")
	}
	i := bytes.Index(img[text.Offset:text.Offset+text.Size], []byte{0x0f, 0x05})
	if i < 0 {
		return 0, errors.New("vDSO: no syscall instruction")
	}
	return text.Offset + uint64(i), nil
}
