// Command hello is a tiny main package the image builder's reproducibility test compiles.
package main

import "fmt"

func main() { fmt.Println("hello") }
