// Command worker is River v0.47.0's program for the deployment mode: River's own client, as
// package riverworker runs it, built with the River this module pins.
package main

import "github.com/pgqcheck/pgqcheck/adapters/riverq/riverworker"

func main() { riverworker.Main("v0.47.0") }
