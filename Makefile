# Makefile — builds build/libevtc.a, build/evtc and the CPU tests.
#   make          library + CLI
#   make test     every CPU test, then a summary line "N passed, N failed"
#   make tsan     runtime tests under ThreadSanitizer (run by make test too)
CC      ?= cc
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -Wall -Wextra -D_GNU_SOURCE -Iinclude -Isrc -fPIC -DEVT_SRC_DIR_DEFAULT=\"$(CURDIR)/src\"
LDLIBS  += -lm -lpthread -ldl -lcjson -lpcre2-8 -lutf8proc
BUILD   := build

# A machine without the Debian packages (the GPU machine) gets copies made
# here by `make deps-bundle` and carried along in build/deps.
ifneq ($(wildcard $(BUILD)/deps/include),)
CFLAGS  += -I$(BUILD)/deps/include
LDLIBS  += -L$(CURDIR)/$(BUILD)/deps/lib -Wl,-rpath,$(CURDIR)/$(BUILD)/deps/lib
endif

LIB_SRC  := $(sort $(wildcard src/*/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(sort $(wildcard tests/test_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_COMMON := $(wildcard tests/common/*.c)

EXAMPLE_BIN := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))

all: $(BUILD)/evtc $(BUILD)/libevtc.a $(EXAMPLE_BIN)

$(BUILD)/examples/%: examples/%.c $(BUILD)/libevtc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libevtc.a -o $@ $(LDLIBS)

$(BUILD)/obj/%.o: %.c $(wildcard include/evt/*.h) $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libevtc.a: $(LIB_OBJ)
	@mkdir -p $(BUILD)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/evtc: tools/evtc.c tools/cli_text.c tools/cli_text.h $(BUILD)/libevtc.a
	$(CC) $(CFLAGS) -rdynamic tools/evtc.c tools/cli_text.c $(BUILD)/libevtc.a -o $@ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_COMMON) $(BUILD)/libevtc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -Itests/common -rdynamic $< $(TEST_COMMON) $(BUILD)/libevtc.a -o $@ -lcmocka $(LDLIBS)

# ThreadSanitizer build of the library and the runtime tests.
TSAN_FLAGS := -O1 -g -fsanitize=thread -std=c11 -Wall -Wextra -D_GNU_SOURCE -Iinclude -Isrc -fPIC -DEVT_SRC_DIR_DEFAULT=\"$(CURDIR)/src\"
$(BUILD)/tsan/libevtc.a: $(LIB_SRC)
	@mkdir -p $(BUILD)/tsan/obj
	set -e; for f in $(LIB_SRC); do o=$(BUILD)/tsan/obj/$$(echo $$f | tr / _).o; \
	  $(CC) $(TSAN_FLAGS) -c $$f -o $$o; done
	rm -f $@ && ar rcs $@ $(BUILD)/tsan/obj/*.o
$(BUILD)/tsan/test_runtime: tests/test_runtime.c $(TEST_COMMON) $(BUILD)/tsan/libevtc.a
	$(CC) $(TSAN_FLAGS) -Itests -Itests/common -rdynamic $< $(TEST_COMMON) $(BUILD)/tsan/libevtc.a -o $@ -lcmocka $(LDLIBS)
tsan: $(BUILD)/tsan/test_runtime

deps:
	@sh tools/deps.sh

test: deps
	@$(MAKE) --no-print-directory all $(TEST_BIN) tsan
	@sh tests/run_all.sh $(TEST_BIN) $(BUILD)/tsan/test_runtime

# The demo: compile an example ahead of time into an artifact (CUDA when a
# GPU is present, else C), then run it under every schedule against the
# sequential reference, with a trace.
demo: deps
	@$(MAKE) --no-print-directory all
	@sh tools/demo.sh

# Link flags for programs built outside this Makefile (GPU scripts).
print-ldlibs:
	@echo $(LDLIBS)

deps-bundle:
	mkdir -p $(BUILD)/deps/include/cjson $(BUILD)/deps/lib
	cp /usr/include/cjson/cJSON.h $(BUILD)/deps/include/cjson/
	cp /usr/include/pcre2.h /usr/include/utf8proc.h $(BUILD)/deps/include/
	for f in libcjson.so libcjson.so.1 libpcre2-8.so libpcre2-8.so.0 libutf8proc.so libutf8proc.so.2; do \
	  cp -L /usr/lib/x86_64-linux-gnu/$$f $(BUILD)/deps/lib/$$f; done

clean:
	rm -rf $(BUILD)

.PHONY: all test tsan clean deps demo deps-bundle print-ldlibs
