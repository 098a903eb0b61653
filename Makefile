# Two commands do everything:
#   make example   build the CLI and run the shop-orders example, then print its tables
#   make test      build the independent Delta reader and run every test
GO ?= go
SHARED ?= ../shared
DELTACHECK ?= $(CURDIR)/bin/deltacheck
EXAMPLE := examples/pipelines/orders_cdc/pipeline.yaml

.PHONY: example test build bench cases deltacheck

build:
	$(GO) build -o bin/pipeline ./cmd/pipeline

example: build
	./bin/pipeline run $(EXAMPLE)
	./bin/pipeline show $(EXAMPLE) orders
	./bin/pipeline changes $(EXAMPLE) orders --from-version 0

# The independent reader from ../shared/tools/deltacheck checks our tables from outside; tests
# that use it are skipped only when it cannot be built (no ../shared).
deltacheck:
	@if [ -d $(SHARED)/tools/deltacheck ]; then \
		mkdir -p bin && cd $(SHARED)/tools/deltacheck && $(GO) build -o $(DELTACHECK) . ; \
	else echo "no $(SHARED)/tools/deltacheck: tests that need the independent reader are skipped"; fi

test: deltacheck
	DELTACHECK=$$( [ -x $(DELTACHECK) ] && echo $(DELTACHECK) ) $(GO) test -count=1 ./...
	@if [ -f $(SHARED)/cases/run_cases.py ] && [ -x $(DELTACHECK) ]; then \
		$(GO) build -o bin/pipeline ./cmd/pipeline && \
		python3 $(SHARED)/cases/run_cases.py ./bin/pipeline $(DELTACHECK) \
			$(SHARED)/cases/00-seed-orders-cdc $(SHARED)/cases/01-users-scd1-docs-example \
			$(SHARED)/cases/02-users-scd2-docs-example $(SHARED)/cases/04-users-scd1-truncate \
			$(SHARED)/cases/05-scd2-track-history-except-column \
			$(SHARED)/cases/07-exact-duplicates-and-replays $(SHARED)/cases/13-scd1-tombstones-and-unknown-keys \
			$(SHARED)/cases/15-debezium-envelope-postgres \
			$(SHARED)/cases/16-books-course-cdc-feed $(SHARED)/cases/18-csv-bronze-quirks \
			$(SHARED)/cases/20-expectations-drop-and-fail-before-cdc; \
	fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./flows ./delta
