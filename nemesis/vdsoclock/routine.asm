# The routines that stand in for the vDSO's clock functions in a process
# whose clock is skewed (GNU as, x86-64; gen.sh assembles it into code.go).
# Each is reached by a jump written over the start of the vDSO function it
# replaces and is called with that function's C ABI. It asks the kernel
# itself (a raw syscall, never the vDSO, which would jump back here), then
# adds the skew that the data block holds for the clock:
#
#   reading = true + base + ((true - t0) * mult) >> 32
#
# per clock id, so a clock that runs at another rate runs smoothly, with no
# steps, and a monotonic clock never goes back. The block is guarded by a
# one-byte sequence number, odd while the sidecar rewrites it: a one-byte
# store cannot be torn, so a reader never uses half of an update. Go calls
# the vDSO on small system stacks: the routines use 32 bytes at most.
	.intel_syntax noprefix
	.text
	# Every label is local, so that the assembler resolves each rip-relative
	# reference itself: the code runs wherever the page is mapped.

# int clock_gettime(clockid_t id, struct timespec *ts)
clock_gettime:
	mov eax, 228			# SYS_clock_gettime
	syscall
	test rax, rax
	jnz 1f				# the kernel's error, as the vDSO returns it
	cmp edi, 16
	jae 1f				# CPU clocks of a pid or thread (negative ids): as they are
	mov r8, [rsi]
	imul r8, r8, 1000000000
	add r8, [rsi+8]
	mov r9d, edi
	call adjust
	mov rax, r8
	call split
	mov [rsi], rax
	mov [rsi+8], rdx
	xor eax, eax
1:	ret

# int gettimeofday(struct timeval *tv, struct timezone *tz)
gettimeofday:
	mov eax, 96			# SYS_gettimeofday
	syscall
	test rax, rax
	jnz 1f
	test rdi, rdi
	jz 1f
	mov r8, [rdi]
	imul r8, r8, 1000000000
	mov rax, [rdi+8]
	imul rax, rax, 1000
	add r8, rax
	xor r9d, r9d			# CLOCK_REALTIME
	call adjust
	mov rax, r8
	call split
	mov [rdi], rax
	mov rax, rdx
	xor edx, edx
	mov ecx, 1000
	div rcx				# nanoseconds to microseconds
	mov [rdi+8], rax
	xor eax, eax
1:	ret

# time_t time(time_t *t)
time:
	sub rsp, 24
	mov rdx, rdi			# t: the syscall keeps rdx
	xor edi, edi			# CLOCK_REALTIME
	mov rsi, rsp
	mov eax, 228			# SYS_clock_gettime
	syscall
	mov rdi, rdx
	mov r8, [rsp]
	imul r8, r8, 1000000000
	add r8, [rsp+8]
	xor r9d, r9d
	call adjust
	mov rax, r8
	call split
	test rdi, rdi
	jz 1f
	mov [rdi], rax
1:	add rsp, 24
	ret

# adjust: r8 = a true reading (ns) of clock r9 (0..15) -> r8 = the skewed
# reading. Clobbers rax, rcx, rdx, r9, r10, r11.
adjust:
	lea r9, [r9+r9*2]
	lea r10, [rip+table]
	lea r9, [r10+r9*8]		# r9 = &table[id]: {base, t0, mult}
2:	movzx r10d, byte ptr [rip+seq]
	test r10d, 1
	jnz 3f
	mov rcx, [r9]			# base
	mov r11, [r9+8]			# t0
	mov rax, [r9+16]		# mult
	movzx edx, byte ptr [rip+seq]
	cmp edx, r10d
	jne 3f
	test rax, rax
	jz 4f
	mov rdx, r8
	sub rdx, r11
	imul rdx			# rdx:rax = (true - t0) * mult
	shrd rax, rdx, 32
	add rcx, rax
4:	add r8, rcx
	ret
3:	pause
	jmp 2b

# split: rax = nanoseconds -> rax = seconds, rdx = nanoseconds (0..1e9-1).
split:
	mov ecx, 1000000000
	cqo
	idiv rcx
	test rdx, rdx
	jns 5f
	add rdx, rcx
	dec rax
5:	ret

	.org 0x800
seq:	.byte 0
	.org 0x808
table:	.zero 16*24
