// Package cmdtool turns commands described in a tools.yaml file into
// task-backed MCP tools.
//
// A tools file lists tools; each runs one program, never a shell:
//
//	tools:
//	  - name: run_tests                 # required; 1-128 of A-Z a-z 0-9 _ - .
//	    description: Run the Go tests of a module.
//	    input_schema:                   # JSON Schema of the arguments; default {type: object}
//	      type: object
//	      properties:
//	        dir: {type: string, pattern: '^[a-z][a-z0-9_-]*$'}   # see Placeholders
//	        run: {type: string}
//	      required: [dir]
//	    argv: [go, test, "-run={run}", ./...]   # required; placeholders allowed after argv[0]
//	    dir: "{dir}"                    # working directory; default: the tools file's directory
//	    env: {GOFLAGS: -count=1}        # extra variables; placeholders allowed in values
//	    env_args: false                 # true: every argument also as MCPTASKS_ARG_<NAME>
//	    inherit_env: [GOPROXY]          # server variables passed on, beyond PATH, HOME, LANG
//	    timeout: 30m                    # stop the command after this long; default none
//	    ttl: 24h                        # how long the task is kept ("none": no limit)
//	    poll_interval: 2s               # the pollIntervalMs suggested to clients
//	    task: required                  # never | optional | required (default required)
//	    retry: {rerun: true, max_attempts: 3}   # re-run after a lost worker (default: fail)
//	    confirm: "Run the tests in {dir}?"      # ask before the task is created
//	    progress: '^(?:ok|FAIL)\s'     # output lines that become the status message
//	    output_limit: 64KiB             # stdout kept in the result: 1 byte to 16MiB, units B, KB, KiB, MB, MiB (default 64KiB)
//	    grace: 5s                       # SIGTERM to SIGKILL when stopped (default 5s, at most 1m)
//
// The file is checked at load, and each mistake is reported with the file,
// line and field: input_schema as JSON Schema 2020-12 (every keyword's
// value of the right shape, "type" one of array, boolean, integer, null,
// number, object, string; patterns, $refs and defaults that compile; no
// near miss of a keyword that checks something, such as patern or
// maxLenght, which would be an annotation and check nothing: a key of
// your own starts with x-), durations and sizes within their ranges,
// placeholders that name properties of the schema.
//
// # Placeholders
//
// "{name}" in an argv entry, dir, an env value or confirm is replaced by
// the argument name, which must be a property of input_schema (checked at
// load). Strings are used as they are, numbers in plain decimal, one way
// whatever their JSON spelling (an integer as its digits: 100 for 1e2 or
// 100.0, 0 for -0), booleans as true or false, arrays and objects as JSON
// (their numbers written the same way); an argv entry that is
// exactly "{name}" becomes one entry per element of an array. An absent
// argument takes the schema's default; if it has none, the argv entry or
// env variable that names it is left out ("-run={run}" disappears with
// run), and dir falls back to its default. "{{" is a literal "{"; any
// other brace is literal, so "{print $1}" needs no escaping.
//
// Values go to the program as separate argv entries, never through a
// shell: "$(rm -rf /)" is just a string. A value can still look like an
// option ("--output=/etc/passwd"); constrain values with pattern or enum
// in the schema, and put "--" before positional arguments. Constrain a
// dir the same way: the command runs wherever it says, and go test or
// make there runs the code they find.
//
// argv[0] is fixed at load: a name without "/" is looked up in PATH, a
// relative path is relative to the tools file's directory, and it cannot
// hold placeholders. A relative dir is relative to the tools file's
// directory too.
//
// # Running
//
// The command runs in its own process group, with stdin from /dev/null,
// stdout and stderr to the server, and no other file descriptor: Go opens
// its own close-on-exec, and mcptasks serve and worker with --tools mark
// those they inherited close-on-exec at start-up (a program that calls
// Register should too). Its environment holds PATH, HOME and LANG from
// the server (plus inherit_env), MCPTASKS_TASK_ID and MCPTASKS_ATTEMPT
// inside a task, the MCPTASKS_ARG_* variables with env_args, and env:
// nothing else of the server's environment is passed on. The command runs as the server's
// user, though, and can read what that user can: the store's file, and,
// unless the server made itself non-dumpable (mcptasks serve and worker
// with --tools do: prctl PR_SET_DUMPABLE), the server's own environment
// in /proc. Run the server as a user of its own, with no secrets beyond
// what its commands may see. With env_args, an
// argument that would be passed in the variable of a property of another
// name (target_dir for target-dir) is refused, sent with that property or
// not, as are two properties (at load) or two other arguments that share a
// variable: an argument the schema does not check cannot fill the variable
// of one it does.
//
// Each line of stdout and stderr ("\n" or "\r" ends one) may become the
// task's status message: the last line, or with progress only the lines
// the pattern matches (the first capture group, if it has one). Updates are
// throttled to a few a second; the latest line always gets through.
//
// Exit code 0 gives a result with stdout as text, cut to output_limit
// with a note saying how much was omitted. Another exit code, a signal or
// the timeout give an isError result saying so, with the last bytes of
// stderr and then stdout. A command that cannot start gives an isError
// result too. When the task is cancelled (or the timeout passes, or the
// server gives the task up), the whole group gets SIGTERM, then SIGKILL
// after grace: every process of the group gets grace, not only the first
// (a child that cleans up on SIGTERM under a shell that exits at once),
// and SIGKILL comes as soon as none is left. Whatever way the command
// ends, what is left of its group is killed before the handler returns.
// At shutdown, grace comes after the server's drain (--drain-timeout):
// the host's stop timeout should cover both.
//
// A call that runs inline (task: never, or task: optional from a client
// that does not declare the Tasks extension) runs the same way, without
// status messages.
//
// # Confirmation
//
// With confirm, a call first gets an input_required result (an MRTR
// round): an elicitation/create form, under the input key "confirm", with
// one required boolean "confirm". The client calls again with the answer
// and the round's requestState; if it accepted with confirm true, the task
// is created (or the command runs inline); otherwise the call gets an
// isError result and no task exists. The round's requestState names the arguments it asked about (a
// digest of them as the command would get them): a yes counts only with
// the requestState of a round about the same arguments, and otherwise, or
// without one, the question is asked again, about the arguments sent. The
// confirmation is a safeguard for people, not an access control: the
// requestState is not signed, and a client can answer yes itself.
//
// # Limits
//
// A process that leaves the group (setsid, a daemon) is out of reach. If
// the server itself is killed with SIGKILL, the command's first process
// is killed with it (Pdeathsig), but that process's own children are not.
package cmdtool
