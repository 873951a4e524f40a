// Encoder mode (-encode-protobuf): the wire server's protobuf bodies come
// from here, so they are what k8s.io/api's own encoder writes. The server
// (kube-informer-compare serve --protobuf-encoder) runs this once before it
// listens: it writes each Pod's JSON to the input as a 4-byte big-endian
// length and the bytes, and reads each Pod's protobuf envelope (`k8s\0` and a
// runtime.Unknown naming v1/Pod) back the same way, in the same order.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodePods reads length-prefixed Pod JSON from in until it ends and writes
// each Pod's protobuf envelope, length-prefixed, to out.
func encodePods(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriterSize(out, 1<<20)
	decoder := scheme.Codecs.UniversalDeserializer()
	encoder := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var length [4]byte
	var encoded bytes.Buffer
	for index := 0; ; index++ {
		if _, err := io.ReadFull(reader, length[:]); errors.Is(err, io.EOF) {
			return writer.Flush()
		} else if err != nil {
			return fmt.Errorf("object %d: %w", index, err)
		}
		data := make([]byte, binary.BigEndian.Uint32(length[:]))
		if _, err := io.ReadFull(reader, data); err != nil {
			return fmt.Errorf("object %d: %w", index, err)
		}
		var pod corev1.Pod
		if _, _, err := decoder.Decode(data, nil, &pod); err != nil {
			return fmt.Errorf("object %d is not a Pod: %w", index, err)
		}
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		encoded.Reset()
		if err := encoder.Encode(&pod, &encoded); err != nil {
			return fmt.Errorf("object %d: %w", index, err)
		}
		binary.BigEndian.PutUint32(length[:], uint32(encoded.Len()))
		if _, err := writer.Write(length[:]); err != nil {
			return err
		}
		if _, err := writer.Write(encoded.Bytes()); err != nil {
			return err
		}
	}
}
