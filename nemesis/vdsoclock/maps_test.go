package vdsoclock

import "testing"

func TestVdsoRange(t *testing.T) {
	maps := `55d0c3a00000-55d0c3a02000 r--p 00000000 00:22 1234   /usr/bin/cat
7ffd1b3f0000-7ffd1b411000 rw-p 00000000 00:00 0          [stack]
7ffd1b5e2000-7ffd1b5e6000 r--p 00000000 00:00 0          [vvar]
7ffd1b5e6000-7ffd1b5e8000 r-xp 00000000 00:00 0          [vdso]
`
	s, e, ok := vdsoRange(maps)
	if !ok || s != 0x7ffd1b5e6000 || e != 0x7ffd1b5e8000 {
		t.Fatalf("vdsoRange = %#x, %#x, %v", s, e, ok)
	}
	if _, _, ok := vdsoRange("7ffd1b5e2000-7ffd1b5e6000 r--p 00000000 00:00 0 [vvar]\n"); ok {
		t.Fatal("found a vDSO in maps that have none")
	}
	if _, _, ok := vdsoRange("zz-7ffd1b5e8000 r-xp 00000000 00:00 0 [vdso]\n"); ok {
		t.Fatal("took a bad range")
	}
}
