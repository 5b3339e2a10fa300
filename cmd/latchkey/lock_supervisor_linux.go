//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The supervisor is a small process between lock run and CMD, the same
// binary started again with supervisorArg. It exists so that everything
// CMD starts dies with lock run, however lock run dies (SIGKILL included):
//
//   - it is a child subreaper (PR_SET_CHILD_SUBREAPER), so every process
//     CMD starts, however deep, and whether or not it leaves CMD's process
//     group or session (setsid), stays its descendant: orphans are
//     reparented to it, not to init;
//   - it learns of lock run's death by the control pipe closing (the
//     kernel closes it whatever killed lock run) and then SIGKILLs every
//     descendant, walking /proc until none is left alive;
//   - when CMD exits, it does the same before it reports CMD's status, so
//     lock run releases the lock only once the whole tree is dead.
//
// It ignores SIGINT, SIGTERM, SIGHUP and SIGQUIT (lock run forwards them
// to CMD's group) and runs in a process group of its own, so that a signal
// to lock run's group, Ctrl-C included, reaches it only through lock run.
//
// Protocol. fd 3 is the read end of the control pipe; lock run writes one
// order per line: "signal N" (send signal N to CMD's process group) or
// "kill" (SIGKILL the whole tree). End of file: lock run is gone; kill the
// tree and exit. fd 4 is the write end of the status pipe: the supervisor
// writes "started" or "error MESSAGE" once, then "exit WS" (CMD's raw wait
// status) when CMD and every process it started are dead.

// supervisor is the state of runSupervisor.
type supervisor struct {
	self   int
	cmd    int // CMD's pid, also its process group id
	status syscall.WaitStatus
	exited bool         // CMD has been reaped; status is set
	denied map[int]bool // pids SIGKILL was refused for (another user's)
}

// runSupervisor is the supervisor's main; argv is "--" CMD [ARGS...].
func runSupervisor(argv []string) int {
	runtime.LockOSThread() // CMD's parent-death signal is tied to this thread
	ctl, status := os.NewFile(3, "control"), os.NewFile(4, "status")
	if len(argv) < 2 || argv[0] != "--" || !isPipe(ctl) || !isPipe(status) {
		fmt.Fprintln(os.Stderr, "latchkey: "+supervisorArg+" is lock run's own helper, not a command")
		return exitUsage
	}
	argv = argv[1:]
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	// Caught, not ignored: CMD gets the default dispositions back at exec.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)

	sv := &supervisor{self: os.Getpid(), denied: map[int]bool{}}
	if err := setChildSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "latchkey: lock run: cannot become a child subreaper (%v): processes %s starts may outlive lock run\n", err, argv[0])
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(status, "error %s\n", oneLine(err.Error()))
		return 0
	}
	sv.cmd = cmd.Process.Pid
	fmt.Fprintln(status, "started")

	orders := make(chan string)
	go readOrders(ctl, orders)
	for !sv.exited {
		select {
		case <-chld:
			sv.reap()
		case o, ok := <-orders:
			if !ok {
				sv.killTree() // lock run is gone: nobody to report to
				return 0
			}
			sv.obey(o)
		}
	}
	sv.killTree()
	fmt.Fprintf(status, "exit %d\n", int(sv.status))
	return 0
}

// obey carries out one order from lock run.
func (sv *supervisor) obey(order string) {
	if order == "kill" {
		sv.killTree()
		return
	}
	if n, ok := strings.CutPrefix(order, "signal "); ok {
		if s, err := strconv.Atoi(n); err == nil && !sv.exited {
			signalGroup(sv.cmd, syscall.Signal(s))
		}
	}
}

// readOrders sends each line of the control pipe to orders and closes it
// at end of file.
func readOrders(ctl *os.File, orders chan<- string) {
	sc := bufio.NewScanner(ctl)
	for sc.Scan() {
		orders <- sc.Text()
	}
	close(orders)
}

// reap collects every child that has exited (CMD and the orphans that were
// reparented to us), keeping CMD's status.
func (sv *supervisor) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if pid == sv.cmd {
			sv.status, sv.exited = ws, true
		}
	}
}

// killTree SIGKILLs every descendant and returns once none is left alive
// (zombies are dead: they run no code and hold nothing but their pid). It
// walks /proc again after every round, so processes forked meanwhile are
// found too; a process with SIGKILL pending cannot fork. Processes of
// another user (a setuid program) refuse the signal: they are named on
// stderr and not waited for.
func (sv *supervisor) killTree() {
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		procs, err := descendants(sv.self)
		if err != nil {
			// Without /proc, CMD's process group is all we can reach.
			fmt.Fprintf(os.Stderr, "latchkey: lock run: cannot list processes (%v); killing only CMD's process group\n", err)
			signalGroup(sv.cmd, syscall.SIGKILL)
			sv.reap()
			return
		}
		live := 0
		for _, p := range procs {
			if sv.denied[p] {
				continue
			}
			if err := syscall.Kill(p, syscall.SIGKILL); errors.Is(err, syscall.EPERM) {
				sv.denied[p] = true
				fmt.Fprintf(os.Stderr, "latchkey: lock run: not permitted to kill process %d that CMD started; it may outlive the lock\n", p)
				continue
			}
			live++
		}
		sv.reap()
		if live == 0 {
			return
		}
		time.Sleep(delay)
	}
}

// descendants lists the live (not zombie) processes below root, from
// /proc: each process's parent is the fourth field of /proc/PID/stat.
func descendants(root int) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	zombie := map[int]bool{}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		ppid, state, ok := readStat(pid)
		if !ok {
			continue // exited meanwhile
		}
		children[ppid] = append(children[ppid], pid)
		zombie[pid] = state == 'Z' || state == 'X'
	}
	var live []int
	for queue := children[root]; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if !zombie[p] {
			live = append(live, p)
		}
		queue = append(queue, children[p]...)
	}
	return live, nil
}

// readStat returns a process's parent and state from /proc/PID/stat,
// whose second field, the command name in parentheses, may hold anything.
func readStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// setChildSubreaper makes orphaned descendants ours rather than init's.
func setChildSubreaper() error {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// isPipe reports whether f is an open pipe.
func isPipe(f *os.File) bool {
	if f == nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}
