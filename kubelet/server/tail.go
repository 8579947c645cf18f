package server

import (
	"fmt"
	"io"
)

// tailBlock is how much tailStart reads at a time, from the end backwards.
const tailBlock = 8 << 10

// tailStart returns the offset at which the last n lines of the first size
// bytes of r begin. A last line without a newline counts as a line; n = 0
// gives size, and n at or above the number of lines gives 0.
func tailStart(r io.ReaderAt, size, n int64) (int64, error) {
	if n <= 0 || size <= 0 {
		return size, nil
	}
	buf := make([]byte, tailBlock)
	end := size
	found := int64(0)
	// A newline that ends the data terminates the last line; it does not
	// start one, so skip it.
	var last [1]byte
	if _, err := r.ReadAt(last[:], size-1); err != nil {
		return 0, fmt.Errorf("reading log tail: %w", err)
	}
	if last[0] == '\n' {
		end--
	}
	for end > 0 {
		start := max(end-tailBlock, 0)
		chunk := buf[:end-start]
		if _, err := r.ReadAt(chunk, start); err != nil && err != io.EOF {
			return 0, fmt.Errorf("reading log tail: %w", err)
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			if found++; found == n {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
