// Package sequential runs programs one operation at a time beside the model: the queue's
// answers judged as each statement returns, its snapshot compared with the model after every
// step (Env). It holds the Prop state machine that rapid drives (StateMachine, drawing from
// package generate), the search that keeps a failure and reduces its program (SeqSearch), and
// the replays that regression programs and reductions run.
package sequential
