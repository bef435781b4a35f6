// Package verdict holds what a run concludes: a broken promise as a value (Finding), the
// table of properties each kind of run judges and how each fared (Table), the reduction of a
// failing program to the smallest one that fails the same way, and how a failure is reported to
// rapid so that its shrinker keeps to the same property.
package verdict
