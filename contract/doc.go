// Package contract holds the wire types every part of splitbrain agrees on: the node API, the watch line, the environment's names, the resource's requests and answers, a clock skew and a promise.
//
// It is the Go form of docs/contract.md and imports nothing of splitbrain's:
// targets, workloads, nemesis, checkers, results and the harness all read it
// downward. A change here is a change of contract, made in that document first.
package contract
