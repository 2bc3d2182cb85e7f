// Command hello is a binary for the symbol-table check to read.
package main

func main() { println("hello") }
